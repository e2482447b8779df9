/**
 * End to end, as a user's `npm start` runs it: Azurite and the development broker, and the
 * local host as a child process (given both connections, as `npm start` would be against an
 * existing environment). Batches go in over HTTP with fetch; completion is read back over HTTP.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';

import { QueueServiceClient } from '@azure/storage-queue';

import { entityNames, TOPIC } from '../../shared/names';
import type { MeterSnapshot } from '../../shared/storage/meter';
import { type Azurite, startAzurite } from '../../tools/devstack/azurite';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { expectedReport } from '../../tools/testkit/oracle';
import { type BrokerHarness, startTestBroker } from '../support/broker';
import { type HostProcess, startHostProcess } from '../support/host-process';
import { uniquePrefix } from '../support/storage';

const PREFIX = uniquePrefix();
const names = entityNames(PREFIX, 4);
let azurite: Azurite;
let bus: BrokerHarness;
let host: HostProcess;
let base = '';

async function hostHealth(): Promise<{ storageTransactions: MeterSnapshot; drains: { inProgress: number } }> {
  const res = await fetch(`${base}/api/health`);
  return (await res.json()) as { storageTransactions: MeterSnapshot; drains: { inProgress: number } };
}

async function meter(): Promise<MeterSnapshot> {
  return (await hostHealth()).storageTransactions;
}

const queueOps = (m: MeterSnapshot): number =>
  Object.entries(m)
    .filter(([k]) => k.startsWith('queue.'))
    .reduce((a, [, v]) => a + v, 0);

async function submit(
  body: Buffer,
  headers: Record<string, string> = {},
): Promise<{ batchId: string; chunks: number }> {
  const res = await fetch(`${base}/api/batches`, {
    method: 'POST',
    body,
    headers: { 'Content-Type': 'application/x-ndjson', 'x-functions-key': 'any-key-works-locally', ...headers },
  });
  assert.equal(res.status, 202, await res.clone().text());
  assert.match(res.headers.get('location') ?? '', /^\/api\/batches\/[a-z0-9-]+$/);
  return (await res.json()) as { batchId: string; chunks: number };
}

async function waitCompleted(batchId: string): Promise<void> {
  await host.until(`batch ${batchId} completed`, 60_000, async () => {
    const res = await fetch(`${base}/api/batches/${batchId}`);
    const body = (await res.json()) as { status: string };
    assert.notEqual(body.status, 'failed');
    return body.status === 'completed' ? true : undefined;
  });
}

async function reportOf(batchId: string): Promise<{ rows: unknown[]; totals: unknown[]; transactions: number }> {
  const res = await fetch(`${base}/api/batches/${batchId}/report`);
  assert.equal(res.status, 200);
  return (await res.json()) as { rows: unknown[]; totals: unknown[]; transactions: number };
}

before(async () => {
  [azurite, bus] = await Promise.all([startAzurite(), startTestBroker()]);
  host = await startHostProcess({
    StorageConnection: azurite.connectionString,
    ServiceBusConnection: bus.broker.connectionString,
    PUSHDRAIN_NAME_PREFIX: PREFIX,
    PUSHDRAIN_CHUNK_SIZE: '500',
    PUSHDRAIN_MAX_IDLE_MS: '1000',
    // Far in the future: this test shows that nothing runs unless an event arrives.
    PUSHDRAIN_SWEEP_SCHEDULE: '0 0 0 1 1 *',
  });
  base = host.base;
});

after(async () => {
  if (host) {
    const code = await host.stop();
    assert.equal(code, 0, `the host stops cleanly on SIGINT:\n${host.output().slice(-2000)}`);
    assert.match(host.output(), /Stopped cleanly/);
  }
  await bus?.close();
  await azurite?.stop();
});

describe('end to end over HTTP and Service Bus', () => {
  test('the first dequeue happens because of the Service Bus event, not polling', async (t) => {
    // Service Bus refuses every send for now: ingest still answers 202 (work durably enqueued).
    bus.broker.faults.serverBusy(1000);
    const txns = generate(1200, 101, 30);
    const { batchId, chunks } = await submit(toNdjson(txns));
    bus.broker.faults.reset();
    assert.equal(chunks, 3);
    const queues = QueueServiceClient.fromConnectionString(azurite.connectionString);
    const depth = async (): Promise<number> => {
      let n = 0;
      for (const q of names.inputQueues())
        n += (await queues.getQueueClient(q).getProperties()).approximateMessagesCount ?? 0;
      return n;
    };
    assert.equal(await depth(), 3, 'the pointers are queued');
    const quietMs = 3000;
    await new Promise((r) => setTimeout(r, quietMs));
    const before = await meter();
    assert.equal(before['queue.get'] ?? 0, 0, `no dequeue in ${quietMs} ms without an event`);
    assert.equal(await depth(), 3, 'nothing was taken');
    const status = (await (await fetch(`${base}/api/batches/${batchId}`)).json()) as { status: string };
    assert.equal(status.status, 'accepted');

    // Now deliver the WorkDetected events the publish could not send.
    const sender = bus.client().createSender(TOPIC);
    const woken = names.inputQueues().map((queueName) => ({
      body: { storageAccount: 'devstoreaccount1', queueName, payloadSize: 1, role: 'input', batchId },
      applicationProperties: { role: 'input' },
    }));
    await sender.sendMessages(woken);
    await sender.close();
    await waitCompleted(batchId);
    const after = await meter();
    assert.ok((after['queue.get'] ?? 0) > 0, 'dequeues happened once the event arrived');
    const report = await reportOf(batchId);
    const expected = expectedReport(txns);
    assert.deepEqual(report.rows, expected.rows);
    assert.deepEqual(report.totals, expected.totals);
    t.diagnostic(`no queue transaction in ${quietMs} ms with work queued and no event; completed after the event`);
  });

  test('several batches over HTTP complete with reports equal to an independent computation; idle costs zero queue transactions', async (t) => {
    const started = Date.now();
    const batches = [generate(3000, 201, 80), generate(2500, 202, 80), generate(1, 203, 1)];
    const submitted = await Promise.all([
      submit(toNdjson(batches[0]!)),
      submit(gzipSync(Buffer.from(JSON.stringify(batches[1]))), {
        'Content-Type': 'application/json',
        'Content-Encoding': 'gzip',
      }),
      submit(toNdjson(batches[2]!), { 'Idempotency-Key': `e2e-${PREFIX}` }),
    ]);
    await Promise.all(submitted.map((s) => waitCompleted(s.batchId)));
    const elapsed = Date.now() - started;
    for (const [i, s] of submitted.entries()) {
      const report = await reportOf(s.batchId);
      const expected = expectedReport(batches[i]!);
      assert.equal(report.transactions, batches[i]!.length);
      assert.deepEqual(report.rows, expected.rows);
      assert.deepEqual(report.totals, expected.totals);
    }
    const csv = await fetch(`${base}/api/batches/${submitted[0].batchId}/report?format=csv`);
    assert.equal(csv.headers.get('content-type'), 'text/csv; charset=utf-8');

    // Let the drains' back-off run out, then measure an idle window. Idle is no drain running
    // (a quiet meter alone can be a task between two back-off sleeps on a loaded machine).
    let last = -1;
    await host.until('the drains to go idle', 30_000, async () => {
      const h = await hostHealth();
      const n = queueOps(h.storageTransactions);
      const settled = n === last && h.drains.inProgress === 0;
      last = n;
      return settled ? true : (await new Promise((r) => setTimeout(r, 1500)), undefined);
    });
    const windowMs = 5000;
    const m0 = await meter();
    const b0 = bus.broker.stats();
    await new Promise((r) => setTimeout(r, windowMs));
    const m1 = await meter();
    const b1 = bus.broker.stats();
    assert.equal(queueOps(m1) - queueOps(m0), 0, `zero queue transactions in a ${windowMs} ms idle window`);
    assert.equal((m1.total ?? 0) - (m0.total ?? 0), 0, 'zero storage transactions of any kind');
    assert.equal((b1.send ?? 0) - (b0.send ?? 0), 0, 'no Service Bus sends while idle');
    assert.equal((b1.deliver ?? 0) - (b0.deliver ?? 0), 0, 'no Service Bus deliveries while idle');
    t.diagnostic(
      `3 batches (5,501 transactions) completed ${elapsed} ms after the first POST; idle ${windowMs} ms: 0 storage, 0 Service Bus operations`,
    );
  });
});
