/**
 * An endpoint marked down (shared/storage/endpoint-outages.ts), as the local stack marks its
 * embedded Azurite while the supervisor restarts it: the app's Storage attempts wait for it to be
 * back instead of spending the SDK's quick retries on refused connections, so a write sent in the
 * gap goes through once Azurite is back. The wait is bounded and ends with the caller's abort.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';

import { storageConnection } from '../../shared/config/connections';
import { createStorageClients } from '../../shared/storage/clients';
import { endpointOf, EndpointOutages, endpointOutages } from '../../shared/storage/endpoint-outages';
import { StorageMeter } from '../../shared/storage/meter';
import { type Azurite, startAzurite } from '../../tools/devstack/azurite';

const running: Azurite[] = [];
after(async () => {
  for (const a of running) await a.stop();
});

describe('Storage attempts wait for an endpoint marked down', () => {
  test('a queue created while Azurite is down and marked so is created once it is back, later than the retries last', async () => {
    const first = await startAzurite();
    running.push(first);
    const clients = createStorageClients(
      storageConnection({ StorageConnection: first.connectionString }),
      new StorageMeter(),
    );
    await clients.queues.getQueueClient('before').create();
    const endpoints = [`127.0.0.1:${first.blobPort}`, `127.0.0.1:${first.queuePort}`];
    await first.stop(); // in memory: a SIGKILL
    endpointOutages.set(endpoints, true);
    try {
      let doneAt: number | undefined;
      let failed: Error | undefined;
      const queue = clients.queues.getQueueClient('made-in-the-gap');
      const create = queue.create().then(
        () => void (doneAt = Date.now()),
        (e: Error) => void (failed = e),
      );
      // Longer than the SDK's four tries take (about 2 s): unmarked, the create fails refused (below).
      await new Promise((r) => setTimeout(r, 3_000));
      assert.equal(failed?.message, undefined, 'nothing fails while Azurite is down and marked so');
      assert.equal(doneAt, undefined, 'nothing answers while Azurite is down');
      const second = await startAzurite({ blobPort: first.blobPort, queuePort: first.queuePort });
      running.push(second);
      const backAt = Date.now();
      endpointOutages.set(endpoints, false);
      await create;
      assert.equal(failed, undefined);
      assert.ok(doneAt! >= backAt, 'done after Azurite was back');
      assert.equal((await queue.getProperties())._response.status, 200, 'the restarted Azurite has it');
    } finally {
      endpointOutages.set(endpoints, false);
    }
  });

  test('unmarked, the same gap fails the send (the wait is what carries it)', async () => {
    const a = await startAzurite();
    const clients = createStorageClients(
      storageConnection({ StorageConnection: a.connectionString }),
      new StorageMeter(),
    );
    await clients.queues.getQueueClient('before').create();
    await a.stop();
    await assert.rejects(clients.queues.getQueueClient('refused').create(), /ECONNREFUSED/);
  });
});

describe('EndpointOutages', () => {
  test('a wait ends when the endpoint is back, after its bound, or on abort; an unmarked endpoint does not wait', async () => {
    const outages = new EndpointOutages();
    const at = endpointOf('http://127.0.0.1:10001/devstoreaccount1/q/messages');
    assert.equal(at, '127.0.0.1:10001');
    assert.equal(endpointOf('https://acct.queue.core.windows.net/q'), 'acct.queue.core.windows.net:443');
    let settled = false;
    await outages.waitUntilBack(at, 60_000).then(() => (settled = true));
    assert.ok(settled, 'not marked: no wait');

    outages.set([at], true);
    assert.ok(outages.isDown(at));
    settled = false;
    const back = outages.waitUntilBack(at, 60_000).then(() => (settled = true));
    await new Promise((r) => setImmediate(r));
    assert.equal(settled, false, 'waits while down');
    outages.set([at], false);
    await back;
    assert.equal(outages.isDown(at), false);

    outages.set([at], true);
    const bounded = Date.now();
    await outages.waitUntilBack(at, 50);
    assert.ok(Date.now() - bounded >= 40, 'the bound ends the wait');
    const later = Date.now();
    await outages.waitUntilBack(at, 50);
    assert.ok(Date.now() - later < 40, 'the bound counts from the outage, not from each attempt');
    outages.set([at], false);
    outages.set([at], true);
    const controller = new AbortController();
    const aborted = outages.waitUntilBack(at, 60_000, controller.signal).then(() => (settled = true));
    settled = false;
    controller.abort();
    await aborted;
    assert.ok(settled, 'the caller abort ends the wait');
  });
});
