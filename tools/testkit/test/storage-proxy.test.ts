/**
 * The fault-injecting Storage proxy, proved switch by switch through the real
 * @azure/storage-blob and @azure/storage-queue SDKs against real Azurite: what the client
 * sees, what Azurite ends up holding, and what the proxy counted.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, afterEach, before, describe, test } from 'node:test';

import { BlobServiceClient, type ContainerClient } from '@azure/storage-blob';
import type { QueueClient } from '@azure/storage-queue';
import { QueueServiceClient } from '@azure/storage-queue';

import { storageConnection } from '../../../shared/config/connections';
import { retryDecision } from '../../../shared/retry/transient';
import { createStorageClients } from '../../../shared/storage/clients';
import { StorageMeter } from '../../../shared/storage/meter';
import { type Azurite, startAzurite } from '../../devstack/azurite';
import { proxiedConnectionString, startStorageProxy, type StorageProxy } from '../storage-proxy';

let azurite: Azurite;
const proxies = new Set<StorageProxy>();

before(async () => {
  azurite = await startAzurite();
});
afterEach(async () => {
  for (const p of proxies) await p.close();
  proxies.clear();
});
after(async () => {
  await azurite?.stop();
});

async function proxy(stallMaxMs?: number): Promise<StorageProxy> {
  const p = await startStorageProxy(azurite, stallMaxMs === undefined ? {} : { stallMaxMs });
  proxies.add(p);
  return p;
}

interface Retry {
  maxTries?: number;
  tryTimeoutInMs?: number;
}

const retryOptions = ({ maxTries = 4, tryTimeoutInMs = 10_000 }: Retry = {}): object => ({
  maxTries,
  tryTimeoutInMs,
  retryDelayInMs: 5,
  maxRetryDelayInMs: 20,
});

/** Clients through the proxy, and a direct one that sees what Azurite really holds. */
function blobs(p: StorageProxy, retry?: Retry): BlobServiceClient {
  return BlobServiceClient.fromConnectionString(p.connectionString(azurite.connectionString), {
    retryOptions: retryOptions(retry),
  });
}
function queues(p: StorageProxy, retry?: Retry): QueueServiceClient {
  return QueueServiceClient.fromConnectionString(p.connectionString(azurite.connectionString), {
    retryOptions: retryOptions(retry),
  });
}
const direct = {
  blobs: (): BlobServiceClient => BlobServiceClient.fromConnectionString(azurite.connectionString),
  queues: (): QueueServiceClient => QueueServiceClient.fromConnectionString(azurite.connectionString),
};

const name = (kind: string): string => `${kind}-${randomBytes(5).toString('hex')}`;

async function freshContainer(): Promise<ContainerClient> {
  const c = direct.blobs().getContainerClient(name('c'));
  await c.create();
  return c;
}
async function freshQueue(): Promise<QueueClient> {
  const q = direct.queues().getQueueClient(name('q'));
  await q.create();
  return q;
}

async function rejection(p: Promise<unknown>): Promise<{ statusCode?: number; code?: string; message: string }> {
  try {
    await p;
  } catch (e) {
    return e as { statusCode?: number; code?: string; message: string };
  }
  return assert.fail('expected the operation to fail');
}

const isSendMessage = { service: 'queue', method: 'POST', path: /\/messages$/ } as const;

describe('proxiedConnectionString', () => {
  test('points both endpoints at the proxy and keeps the account path and the rest', () => {
    const cs =
      'DefaultEndpointsProtocol=http;AccountName=acct1;AccountKey=a2V5;BlobEndpoint=http://127.0.0.1:10000/acct1;QueueEndpoint=http://localhost:10001/acct1;';
    assert.equal(
      proxiedConnectionString(cs, { blobPort: 4001, queuePort: 4002 }),
      'DefaultEndpointsProtocol=http;AccountName=acct1;AccountKey=a2V5;BlobEndpoint=http://127.0.0.1:4001/acct1;QueueEndpoint=http://127.0.0.1:4002/acct1;',
    );
    assert.throws(
      () => proxiedConnectionString('UseDevelopmentStorage=true', { blobPort: 1, queuePort: 2 }),
      /BlobEndpoint and QueueEndpoint/,
    );
  });
});

describe('storage proxy through the real SDKs', () => {
  test('with nothing armed it is transparent: blobs and queue messages round-trip', async () => {
    const p = await proxy();
    const c = blobs(p).getContainerClient(name('c'));
    await c.create();
    await c.getBlockBlobClient('a/b.txt').upload('hello', 5);
    assert.equal((await c.getBlockBlobClient('a/b.txt').downloadToBuffer()).toString(), 'hello');
    const q = queues(p).getQueueClient(name('q'));
    await q.create();
    await q.sendMessage('m1');
    const [m] = (await q.receiveMessages({ numberOfMessages: 1 })).receivedMessageItems;
    assert.equal(m?.messageText, 'm1');
    await q.deleteMessage(m.messageId, m.popReceipt);
    assert.equal((await q.getProperties()).approximateMessagesCount, 0);
    const n = p.counts();
    assert.ok(n.requests >= 8, `${n.requests} requests`);
    assert.equal(n.forwarded, n.requests);
    assert.deepEqual(n.injected, { status503: 0, status500: 0, reset: 0, stall: 0, dropAfterApply: 0 });
  });

  test('503 ServerBusy on blob PUTs only: the SDK retries and succeeds; one try surfaces a transient 503', async () => {
    const p = await proxy();
    const c = await freshContainer();
    const busy = p.inject('status503', { times: 2, match: { service: 'blob', method: 'PUT' } });
    const viaProxy = blobs(p).getContainerClient(c.containerName);
    await viaProxy.getBlockBlobClient('x').upload('payload', 7);
    assert.equal(busy.remaining, 0);
    assert.equal(p.counts().injected.status503, 2);
    assert.equal(p.counts().forwarded, 1, 'only the third attempt reached Azurite');
    assert.equal((await c.getBlockBlobClient('x').downloadToBuffer()).toString(), 'payload');

    // A GET is not a PUT: it passes untouched while a PUT rule is armed.
    p.inject('status503', { times: 5, match: { service: 'blob', method: 'PUT' } });
    assert.equal((await viaProxy.getBlockBlobClient('x').downloadToBuffer()).toString(), 'payload');
    const e = await rejection(
      blobs(p, { maxTries: 1 }).getContainerClient(c.containerName).getBlockBlobClient('y').upload('z', 1),
    );
    assert.equal(e.statusCode, 503);
    assert.equal(e.code, 'ServerBusy');
    assert.equal(retryDecision(e).retry, true, 'the app classifies it as transient');
    assert.equal(await c.getBlockBlobClient('y').exists(), false, 'a 503 answered by the proxy never reached Azurite');
  });

  test('500 on queue DELETE only: sends and receives pass, the delete is retried', async () => {
    const p = await proxy();
    const target = await freshQueue();
    const q = queues(p).getQueueClient(target.name);
    p.inject('status500', { times: 1, match: { service: 'queue', method: 'DELETE' } });
    await q.sendMessage('m');
    const [m] = (await q.receiveMessages()).receivedMessageItems;
    assert.ok(m);
    await q.deleteMessage(m.messageId, m.popReceipt);
    assert.deepEqual(
      p.injectedFaults().map((f) => [f.kind, f.method]),
      [['status500', 'DELETE']],
    );
    assert.match(p.injectedFaults()[0]!.path, new RegExp(`/${target.name}/messages/${m.messageId}$`));
    assert.equal((await target.getProperties()).approximateMessagesCount, 0);

    p.inject('status500', { match: { service: 'queue', method: 'DELETE' } });
    await q.sendMessage('m2');
    const [m2] = (await q.receiveMessages()).receivedMessageItems;
    const e = await rejection(
      queues(p, { maxTries: 1 }).getQueueClient(target.name).deleteMessage(m2!.messageId, m2!.popReceipt),
    );
    assert.equal(e.statusCode, 500);
    assert.equal(e.code, 'InternalError');
  });

  test('query matching and skip: only the third container-level request fails', async () => {
    const p = await proxy();
    const svc = blobs(p, { maxTries: 1 });
    const rule = p.inject('status503', { skip: 2, match: { service: 'blob', query: { restype: 'container' } } });
    const c = svc.getContainerClient(name('c'));
    await c.create(); // 1st container-level request: skipped
    await c.getBlockBlobClient('b').upload('1', 1); // no restype: not eligible
    await c.getProperties(); // 2nd: skipped
    const e = await rejection(c.getProperties()); // 3rd: faulted
    assert.equal(e.statusCode, 503);
    assert.equal(rule.hits, 1);
    await c.getProperties(); // spent
    assert.equal(p.counts().injected.status503, 1);
  });

  test('reset before forwarding: the SDK retries a connection reset; one try sees ECONNRESET', async () => {
    const p = await proxy();
    const c = await freshContainer();
    await c.getBlockBlobClient('r').upload('resettable', 10);
    p.inject('reset', { times: 2, match: { service: 'blob', method: 'GET' } });
    assert.equal(
      (await blobs(p).getContainerClient(c.containerName).getBlockBlobClient('r').downloadToBuffer()).toString(),
      'resettable',
    );
    assert.equal(p.counts().injected.reset, 2);
    p.inject('reset', { match: { service: 'blob', method: 'GET' } });
    const e = await rejection(
      blobs(p, { maxTries: 1 }).getContainerClient(c.containerName).getBlockBlobClient('r').downloadToBuffer(),
    );
    assert.equal(e.code, 'ECONNRESET');
    assert.equal(retryDecision(e).retry, true);
  });

  test("stall past the caller's deadline: the caller's abort wins over the stall timeout (not retried), the proxy lets go, the next call succeeds", async () => {
    const p = await proxy();
    const target = await freshQueue();
    await target.sendMessage('slow');
    p.inject('stall', { match: { service: 'queue', method: 'GET' } });
    const app = createStorageClients(
      storageConnection({ StorageConnection: p.connectionString(azurite.connectionString) }),
      new StorageMeter(),
      {
        stallTimeoutMs: 10_000,
      },
    );
    const q = app.queues.getQueueClient(target.name);
    const started = Date.now();
    const e = await rejection(q.peekMessages({ abortSignal: AbortSignal.timeout(300) }));
    const elapsed = Date.now() - started;
    assert.equal((e as Error).name, 'AbortError');
    assert.ok(elapsed >= 290 && elapsed < 10_000, `gave up after ${elapsed} ms`);
    assert.equal(p.counts().injected.stall, 1);
    for (let i = 0; i < 50 && p.stalled > 0; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(p.stalled, 0, 'the proxy lets go of a request its client abandoned');
    assert.equal((await q.peekMessages()).peekedMessageItems[0]?.messageText, 'slow');
  });

  test("the SDK's tryTimeoutInMs is only a server-side hint; the app's stall timeout abandons a stalled attempt and the retry succeeds", async () => {
    const p = await proxy(30_000);
    const target = await freshQueue();
    const timeouts: (string | null)[] = [];
    // A rule whose matcher never matches sees every request: an observer.
    p.inject('status500', {
      match: (r) => {
        timeouts.push(r.query.get('timeout'));
        return false;
      },
    });
    p.inject('stall', { match: { service: 'queue' } });
    // The app's own clients (shared/storage/clients.ts), with a short stall bound.
    const app = createStorageClients(
      storageConnection({ StorageConnection: p.connectionString(azurite.connectionString) }),
      new StorageMeter(),
      {
        stallTimeoutMs: 300,
      },
    );
    const started = Date.now();
    const props = await app.queues.getQueueClient(target.name).getProperties();
    const elapsed = Date.now() - started;
    assert.equal(props.approximateMessagesCount, 0);
    assert.deepEqual(timeouts, ['30', '30'], 'the server still gets its ?timeout= hint (seconds) on each attempt');
    assert.deepEqual(p.counts().injected, { status503: 0, status500: 0, reset: 0, stall: 1, dropAfterApply: 0 });
    assert.equal(p.counts().forwarded, 1, 'the second attempt reached Azurite');
    // Our timer let go, not the proxy (which would hold the stall for 30 s).
    assert.ok(elapsed >= 290 && elapsed < 15_000, `answered after ${elapsed} ms`);
    for (let i = 0; i < 50 && p.stalled > 0; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(p.stalled, 0, 'the abandoned connection was closed');
  });

  test('every attempt stalls: the call fails after maxTries with a transient ETIMEDOUT', async () => {
    const p = await proxy(30_000);
    const target = await freshQueue();
    p.inject('stall', { times: 10, match: { service: 'queue' } });
    const app = createStorageClients(
      storageConnection({ StorageConnection: p.connectionString(azurite.connectionString) }),
      new StorageMeter(),
      {
        stallTimeoutMs: 200,
      },
    );
    const e = await rejection(app.queues.getQueueClient(target.name).getProperties());
    assert.equal(e.code, 'ETIMEDOUT');
    assert.match(e.message, /no progress for 200 ms/);
    assert.equal(retryDecision(e).retry, true, 'the retry table retries it too');
    assert.equal(p.counts().injected.stall, 4, 'one stalled attempt per try (maxTries 4)');
    assert.equal(p.counts().forwarded, 0);
  });

  test('a stall is bounded by stallMaxMs, and close() ends a held request at once', async () => {
    const bounded = await proxy(400);
    const target = await freshQueue();
    bounded.inject('stall', { match: { service: 'queue' } });
    const started = Date.now();
    const e = await rejection(
      queues(bounded, { maxTries: 1, tryTimeoutInMs: 60_000 }).getQueueClient(target.name).getProperties(),
    );
    const elapsed = Date.now() - started;
    assert.ok(elapsed >= 350 && elapsed < 10_000, `dropped after ${elapsed} ms`);
    assert.ok(retryDecision(e).retry, `a dropped stall is transient (${e.code ?? e.message})`);

    const p = await proxy(60_000);
    p.inject('stall', { match: { service: 'queue' } });
    const pending = rejection(
      queues(p, { maxTries: 1, tryTimeoutInMs: 60_000 }).getQueueClient(target.name).getProperties(),
    );
    for (let i = 0; i < 100 && p.stalled === 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(p.stalled, 1);
    const closing = Date.now();
    await p.close();
    await pending;
    assert.ok(Date.now() - closing < 5_000, 'close() does not wait for the stall');
    assert.equal(p.stalled, 0);
  });

  test('drop after apply: sendMessage fails for the client yet the message is queued; a retry duplicates it', async () => {
    const p = await proxy();
    const target = await freshQueue();
    p.inject('dropAfterApply', { match: isSendMessage });
    const e = await rejection(queues(p, { maxTries: 1 }).getQueueClient(target.name).sendMessage('once'));
    assert.ok(retryDecision(e).retry, `the client saw a transient failure (${e.code ?? e.message})`);
    const peeked = await target.peekMessages({ numberOfMessages: 32 });
    assert.deepEqual(
      peeked.peekedMessageItems.map((m) => m.messageText),
      ['once'],
      'Azurite applied the send',
    );

    // With the SDK's own retry the client sees success, and the queue holds the message twice.
    p.inject('dropAfterApply', { match: isSendMessage });
    await queues(p).getQueueClient(target.name).sendMessage('twice');
    const all = await target.peekMessages({ numberOfMessages: 32 });
    assert.deepEqual(
      all.peekedMessageItems.map((m) => m.messageText),
      ['once', 'twice', 'twice'],
    );
    assert.equal(p.counts().injected.dropAfterApply, 2);
    assert.equal(p.counts().forwarded, 3);
  });

  test('drop after apply on a blob PUT: the upload errors, the blob exists', async () => {
    const p = await proxy();
    const c = await freshContainer();
    p.inject('dropAfterApply', { match: { service: 'blob', method: 'PUT' } });
    const e = await rejection(
      blobs(p, { maxTries: 1 }).getContainerClient(c.containerName).getBlockBlobClient('applied').upload('bytes', 5),
    );
    assert.ok(retryDecision(e).retry);
    assert.equal((await c.getBlockBlobClient('applied').downloadToBuffer()).toString(), 'bytes');
  });
});

describe('chaos mode', () => {
  const OPS = 20;
  /** Idempotent work only (same names, same bytes), so every retry converges. */
  async function script(p: StorageProxy, container: string): Promise<string[]> {
    const c = blobs(p, { maxTries: 10 }).getContainerClient(container);
    const out: string[] = [];
    for (let i = 0; i < OPS; i++) {
      const body = `blob-${i}-`.repeat(i + 1);
      await c.getBlockBlobClient(`b${i}`).upload(body, body.length);
      out.push((await c.getBlockBlobClient(`b${i}`).downloadToBuffer()).toString());
    }
    return out;
  }

  test('a seed replays the same faults; every operation still completes with the right bytes', async () => {
    const expected = Array.from({ length: OPS }, (_, i) => `blob-${i}-`.repeat(i + 1));
    const clean = await proxy();
    assert.deepEqual(await script(clean, (await freshContainer()).containerName), expected);
    const baseline = clean.counts().requests;
    const rates = { status503: 0.12, status500: 0.06, reset: 0.08, dropAfterApply: 0.1 };
    const runs = [];
    for (let run = 0; run < 2; run++) {
      const p = await proxy();
      p.chaos({ seed: 42, rates, match: { service: 'blob' } });
      assert.deepEqual(await script(p, (await freshContainer()).containerName), expected);
      runs.push(p.counts());
      assert.throws(() => p.chaos({ seed: 1, rates: { status503: 0.7, reset: 0.5 } }), /at most 1/);
    }
    const [first, second] = runs;
    assert.deepEqual(second, first, 'same seed, same request sequence, same faults');
    const n = first!;
    const injected = Object.values(n.injected).reduce((a, b) => a + b, 0);
    assert.equal(n.requests, baseline + injected, 'each fault cost exactly one retry');
    assert.equal(n.forwarded, baseline + n.injected.dropAfterApply);
    for (const kind of ['status503', 'status500', 'reset', 'dropAfterApply'] as const)
      assert.ok(n.injected[kind] > 0, `${kind} was drawn`);
    assert.equal(n.injected.stall, 0);
  });
});
