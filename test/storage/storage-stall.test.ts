/**
 * The per-attempt stall timeout (shared/storage/stall-timeout.ts) through the app's own Storage
 * clients against real Azurite: a timer meant for a dead connection never cuts off a large
 * transfer that is moving or a reader that is slow, and a response that freezes mid-body is
 * retried from where it stopped. (The fault proxy's stall before any answer is in
 * storage-proxy.test.ts.)
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, afterEach, before, describe, test } from 'node:test';

import { storageConnection } from '../../shared/config/connections';
import { createStorageClients, type StorageClients } from '../../shared/storage/clients';
import { StorageMeter } from '../../shared/storage/meter';
import { type Azurite, startAzurite } from '../../tools/devstack/azurite';
import { proxiedConnectionString, startStorageProxy } from '../../tools/testkit/storage-proxy';
import { type SlowLink, startSlowLink } from '../support/slow-link';

let azurite: Azurite;
const links = new Set<SlowLink>();

before(async () => {
  azurite = await startAzurite();
});
afterEach(async () => {
  for (const l of links) await l.close();
  links.clear();
});
after(async () => {
  await azurite?.stop();
});

function appClients(
  connectionString: string,
  stallTimeoutMs: number,
): { clients: StorageClients; meter: StorageMeter } {
  const meter = new StorageMeter();
  return {
    clients: createStorageClients(storageConnection({ StorageConnection: connectionString }), meter, {
      stallTimeoutMs,
    }),
    meter,
  };
}

async function slowBlobLink(bytesPerSecond?: number): Promise<{ link: SlowLink; connectionString: string }> {
  const link = await startSlowLink(azurite.blobPort, { bytesPerSecond });
  links.add(link);
  return { link, connectionString: proxiedConnectionString(azurite.connectionString, { blobPort: link.port }) };
}

async function container(clients: StorageClients): Promise<string> {
  const name = `stall-${randomBytes(5).toString('hex')}`;
  await clients.blobs.getContainerClient(name).create();
  return name;
}

const MiB = 1024 * 1024;

describe('stall timeout measures time without progress', () => {
  test('a 4 MiB upload over a 1.5 MiB/s link outlasts a 1 s bound and still goes through in one attempt', async () => {
    const { connectionString } = await slowBlobLink(1.5 * MiB);
    const { clients, meter } = appClients(connectionString, 1_000);
    const name = await container(appClients(azurite.connectionString, 1_000).clients);
    const body = randomBytes(4 * MiB);
    meter.reset();
    const started = Date.now();
    await clients.blobs.getContainerClient(name).getBlockBlobClient('big').upload(body, body.length);
    const elapsed = Date.now() - started;
    assert.equal(meter.snapshot()['blob.put'], 1, 'no attempt was abandoned');
    assert.ok(elapsed > 2_000, `the transfer itself outlasted the bound (${elapsed} ms)`);
    const back = await appClients(azurite.connectionString, 1_000)
      .clients.blobs.getContainerClient(name)
      .getBlockBlobClient('big')
      .downloadToBuffer();
    assert.ok(back.equals(body));
  });

  test('a reader that pauses longer than the bound is backpressure, not a stall: one GET, every byte', async () => {
    const { clients, meter } = appClients(azurite.connectionString, 300);
    const name = await container(clients);
    const body = randomBytes(2 * MiB);
    await clients.blobs.getContainerClient(name).getBlockBlobClient('read-slowly').upload(body, body.length);
    meter.reset();
    const res = await clients.blobs.getContainerClient(name).getBlockBlobClient('read-slowly').download();
    const parts: Buffer[] = [];
    let pauses = 0;
    for await (const part of res.readableStreamBody as AsyncIterable<Buffer>) {
      parts.push(part);
      if (pauses < 3) {
        pauses++;
        await new Promise((r) => setTimeout(r, 700));
      }
    }
    assert.equal(pauses, 3);
    assert.ok(Buffer.concat(parts).equals(body));
    assert.equal(meter.snapshot()['blob.get'], 1, 'the slow reader did not trigger a retry');
  });

  test('a response that freezes mid-body is abandoned and the rest fetched again from where it stopped', async () => {
    const { link, connectionString } = await slowBlobLink();
    const { clients, meter } = appClients(connectionString, 500);
    const name = await container(clients);
    const body = randomBytes(2 * MiB);
    await clients.blobs.getContainerClient(name).getBlockBlobClient('freezes').upload(body, body.length);
    // The SDKs share one keep-alive agent: close its connections so the download opens the one that freezes.
    link.dropConnections();
    await new Promise((r) => setTimeout(r, 50));
    const before = link.connections;
    link.freezeNextResponseAfter(256 * 1024);
    const fresh = appClients(connectionString, 500);
    const res = await fresh.clients.blobs.getContainerClient(name).getBlockBlobClient('freezes').download();
    const parts: Buffer[] = [];
    for await (const part of res.readableStreamBody as AsyncIterable<Buffer>) parts.push(part);
    assert.ok(Buffer.concat(parts).equals(body), 'every byte, once');
    assert.equal(fresh.meter.snapshot()['blob.get'], 2, 'the frozen attempt, then one ranged re-read');
    assert.ok(link.connections >= before + 2, 'the retry used a new connection');
    assert.ok(meter.total() >= 2, 'container create and upload went through the link too');
  });

  test('a large body sent in slices is sent whole again on a retry (a fresh stream per attempt)', async () => {
    const proxy = await startStorageProxy(azurite);
    try {
      const { clients, meter } = appClients(proxy.connectionString(azurite.connectionString), 1_000);
      const name = await container(clients);
      const body = randomBytes(MiB + 123);
      proxy.inject('status503', { times: 1, match: { service: 'blob', method: 'PUT' } });
      meter.reset();
      await clients.blobs.getContainerClient(name).getBlockBlobClient('retried').upload(body, body.length);
      assert.equal(meter.snapshot()['blob.put'], 2);
      const back = await appClients(azurite.connectionString, 1_000)
        .clients.blobs.getContainerClient(name)
        .getBlockBlobClient('retried')
        .downloadToBuffer();
      assert.ok(back.equals(body), 'the retried attempt carried every byte');
    } finally {
      await proxy.close();
    }
  });
});
