/**
 * A broker that silently loses every message: every WorkDetected event, every continuation
 * and every scheduled watchdog check is acknowledged and thrown away (the broker's dropSends
 * switch). Real Azurite, the real broker, the local host as a child process with a short sweep
 * schedule and stall threshold: every batch still completes, driven by the timer sweep's
 * recovery alone, with a report equal to the independent computation.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { type Azurite, startAzurite } from '../../tools/devstack/azurite';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { expectedReport } from '../../tools/testkit/oracle';
import { type BrokerHarness, startTestBroker } from '../support/broker';
import { type HostProcess, startHostProcess } from '../support/host-process';
import { uniquePrefix } from '../support/storage';

const SWEEP_SECONDS = 3;
const STALL_SECONDS = 2;

let azurite: Azurite;
let bus: BrokerHarness;
let host: HostProcess | undefined;

before(async () => {
  azurite = await startAzurite();
  bus = await startTestBroker();
});

after(async () => {
  await host?.stop();
  await bus?.close();
  await azurite?.stop();
});

interface Status {
  status: string;
  chunks: number;
  chunksDone: number;
  chunksFailed: number;
}

async function statusOf(h: HostProcess, batchId: string): Promise<Status> {
  const res = await fetch(`${h.base}/api/batches/${batchId}`);
  assert.equal(res.status, 200, `GET /api/batches/${batchId}`);
  return (await res.json()) as Status;
}

describe('a broker that drops every message', () => {
  test('every batch completes through the sweep recovery alone, within about one sweep interval plus the stall threshold', async (t) => {
    bus.broker.faults.dropSends(); // before the host connects: not one event or check ever gets through
    const h = (host = await startHostProcess({
      StorageConnection: azurite.connectionString,
      ServiceBusConnection: bus.broker.connectionString,
      PUSHDRAIN_NAME_PREFIX: uniquePrefix(),
      PUSHDRAIN_CHUNK_SIZE: '300',
      PUSHDRAIN_SWEEP_SCHEDULE: `*/${SWEEP_SECONDS} * * * * *`,
      PUSHDRAIN_STALL_SECONDS: String(STALL_SECONDS),
    }));
    const batches = [generate(1_500, 1101, 40), generate(900, 1102, 25), generate(2_400, 1103, 60)];
    const accepted = await Promise.all(
      batches.map(async (txns) => {
        const res = await fetch(`${h.base}/api/batches`, {
          method: 'POST',
          body: toNdjson(txns),
          headers: { 'Content-Type': 'application/x-ndjson' },
        });
        assert.equal(res.status, 202, await res.clone().text());
        return { batchId: ((await res.json()) as { batchId: string }).batchId, txns, acceptedAt: Date.now() };
      }),
    );

    const latency = new Map<string, number>();
    await h.until('every batch completed', 90_000, async () => {
      for (const b of accepted) {
        if (latency.has(b.batchId)) continue;
        const s = await statusOf(h, b.batchId);
        assert.notEqual(s.status, 'failed', `batch ${b.batchId} failed`);
        if (s.status === 'completed') latency.set(b.batchId, Date.now() - b.acceptedAt);
      }
      if (latency.size < accepted.length) {
        await new Promise((r) => setTimeout(r, 200));
        return undefined;
      }
      return true;
    });

    const stats = bus.broker.stats();
    assert.ok(stats.dropped > 0, 'the app did publish: events and checks were sent and dropped');
    assert.equal(
      stats.messagesIn,
      stats.dropped,
      'every message the broker got was dropped: nothing from Service Bus drove the batches',
    );
    assert.equal(stats.deliver, 0, 'the broker delivered nothing');
    for (const b of accepted) {
      const s = await statusOf(h, b.batchId);
      assert.equal(s.chunksDone, s.chunks, 'every chunk counted');
      assert.equal(s.chunksFailed, 0);
      const report = (await (await fetch(`${h.base}/api/batches/${b.batchId}/report`)).json()) as {
        transactions: number;
        rows: unknown[];
        totals: unknown[];
      };
      const expected = expectedReport(b.txns);
      assert.equal(report.transactions, b.txns.length);
      assert.deepEqual(report.totals, expected.totals, 'a chunk counted twice or lost would show here');
      assert.deepEqual(report.rows, expected.rows);
    }
    const times = [...latency.values()].sort((a, b) => a - b);
    // Only a generous bound (a loaded machine must not fail it); the figure itself is the diagnostic.
    const bound = (SWEEP_SECONDS + STALL_SECONDS) * 1000 + 45_000;
    assert.ok(
      times.every((ms) => ms < bound),
      `each batch completed within ${bound} ms: ${times.join(', ')}`,
    );
    // At least one repair, not one per batch: the batches share the input queues, so a drain woken
    // to repair one batch may finish another's chunks before that one is seen stalled.
    const repaired = accepted.filter((b) =>
      new RegExp(`batch ${b.batchId}: no progress for \\d+ s; recovery woke its queues`).test(h.output()),
    );
    assert.ok(repaired.length > 0, `the sweep repaired a batch:\n${h.output()}`);
    t.diagnostic(
      `202 to completed with every message dropped: ${times.map((ms) => `${ms} ms`).join(', ')} ` +
        `(sweep every ${SWEEP_SECONDS} s + stall threshold ${STALL_SECONDS} s = ${SWEEP_SECONDS + STALL_SECONDS} s, plus the work itself); ` +
        `${stats.dropped} messages dropped; ${repaired.length} of ${accepted.length} batches repaired by name`,
    );
  });
});
