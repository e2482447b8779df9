/**
 * Chaos: nothing lost, nothing counted twice. Many batches through the local host (a child
 * process), while seeded faults hit Storage (through the fault proxy), Service Bus (the
 * broker's switches) and the host itself (SIGKILL mid-drain, then restart). Every batch must
 * end `completed` with a report equal to the independent computation.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';

import { QueueServiceClient } from '@azure/storage-queue';

import { entityNames } from '../../shared/names';
import { type Azurite, startAzurite } from '../../tools/devstack/azurite';
import { loadEntitiesConfig } from '../../tools/devstack/servicebus/config';
import { generate, rng, toNdjson } from '../../tools/testkit/generate';
import { expectedReport } from '../../tools/testkit/oracle';
import { FAULT_KINDS, type FaultKind, startStorageProxy, type StorageProxy } from '../../tools/testkit/storage-proxy';
import { type BrokerHarness, startTestBroker } from '../support/broker';
import { type HostProcess, startHostProcess } from '../support/host-process';
import { uniquePrefix } from '../support/storage';

const PREFIX = uniquePrefix();
const names = entityNames(PREFIX, 4);
const VISIBILITY_SECONDS = 3;

let azurite: Azurite;
let bus: BrokerHarness;
let proxy: StorageProxy;
let host: HostProcess;

/** What the suite did, for the closing summary. */
const ran = {
  batches: 0,
  transactions: 0,
  kills: 0,
  serverBusy: 0,
  detaches: 0,
  connectionDrops: 0,
  storage: {} as Record<FaultKind, number>,
};

interface Submitted {
  batchId: string;
  txns: ReturnType<typeof generate>;
}

/**
 * POST with an Idempotency-Key, retried until accepted: the host may be down or faulted, or a
 * killed request's claim may still be fresh (409 with Retry-After, until it goes stale).
 */
async function submit(key: string, txns: ReturnType<typeof generate>): Promise<Submitted> {
  const body = toNdjson(txns);
  const deadline = Date.now() + 120_000;
  let last = '';
  for (let attempt = 0; attempt < 400 && Date.now() < deadline; attempt++) {
    let wait = 500;
    try {
      const res = await fetch(`${host.base}/api/batches`, {
        method: 'POST',
        body,
        headers: { 'Content-Type': 'application/x-ndjson', 'Idempotency-Key': key },
        signal: AbortSignal.timeout(30_000),
      });
      const text = await res.text();
      if (res.status === 202) {
        ran.batches++;
        ran.transactions += txns.length;
        return { batchId: (JSON.parse(text) as { batchId: string }).batchId, txns };
      }
      last = `${res.status} ${text}`;
      assert.ok(res.status >= 500 || res.status === 409, `unexpected rejection: ${last}`);
      wait = Math.max(wait, Number(res.headers.get('retry-after') ?? 0) * 1000);
    } catch (e) {
      if (e instanceof assert.AssertionError) throw e;
      last = (e as Error).message;
    }
    await new Promise((r) => setTimeout(r, wait));
  }
  throw new Error(`batch ${key} was never accepted: ${last}`);
}

async function statusOf(
  batchId: string,
): Promise<{ status: string; chunks: number; chunksDone: number; chunksFailed: number; error?: string } | undefined> {
  try {
    const res = await fetch(`${host.base}/api/batches/${batchId}`, { signal: AbortSignal.timeout(10_000) });
    return res.status === 200
      ? ((await res.json()) as {
          status: string;
          chunks: number;
          chunksDone: number;
          chunksFailed: number;
          error?: string;
        })
      : undefined;
  } catch {
    return undefined; // the host is restarting, or Storage is faulted: ask again
  }
}

/** Waits for every batch to end, then checks each report against the oracle. */
async function verify(batches: Submitted[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const pending = new Set(batches.map((b) => b.batchId));
  for (let i = 0; pending.size > 0 && Date.now() < deadline && i < 10_000; i++) {
    for (const id of [...pending]) {
      const s = await statusOf(id);
      if (s?.status === 'failed') assert.fail(`batch ${id} failed: ${s.error ?? ''}`);
      if (s?.status === 'completed') pending.delete(id);
    }
    if (pending.size > 0) await new Promise((r) => setTimeout(r, 500));
  }
  assert.equal(
    pending.size,
    0,
    `not completed within ${timeoutMs} ms: ${[...pending].join(', ')}\n${host.output().slice(-3000)}`,
  );
  proxy.clear(); // read the results without faults
  for (const b of batches) {
    const s = await statusOf(b.batchId);
    assert.equal(s?.chunksDone, s?.chunks, 'every chunk counted exactly once');
    const res = await fetch(`${host.base}/api/batches/${b.batchId}/report`);
    assert.equal(res.status, 200);
    const report = (await res.json()) as { transactions: number; rows: unknown[]; totals: unknown[] };
    const expected = expectedReport(b.txns);
    assert.equal(report.transactions, b.txns.length, `${b.batchId}: transaction count`);
    assert.deepEqual(
      report.totals,
      expected.totals,
      `${b.batchId}: totals (a chunk counted twice or lost would show here)`,
    );
    assert.deepEqual(report.rows, expected.rows, `${b.batchId}: rows`);
  }
}

/** The proxy's counts are cumulative over the whole file. */
function tally(): void {
  ran.storage = proxy.counts().injected;
}

before(async () => {
  azurite = await startAzurite();
  // Short locks so an event held by a killed host comes back in seconds, not minutes.
  const entities = loadEntitiesConfig();
  for (const t of entities.topics ?? []) for (const s of t.subscriptions) s.lockDuration = 'PT5S';
  for (const q of entities.queues ?? []) q.lockDuration = 'PT5S';
  bus = await startTestBroker({ entities });
  proxy = await startStorageProxy({ blobPort: azurite.blobPort, queuePort: azurite.queuePort }, { stallMaxMs: 2_000 });
  host = await startHostProcess({
    StorageConnection: proxy.connectionString(azurite.connectionString),
    ServiceBusConnection: bus.broker.connectionString,
    PUSHDRAIN_NAME_PREFIX: PREFIX,
    PUSHDRAIN_CHUNK_SIZE: '250',
    PUSHDRAIN_VISIBILITY_TIMEOUT_SECONDS: String(VISIBILITY_SECONDS),
    PUSHDRAIN_MAX_IDLE_MS: '800',
    PUSHDRAIN_WATCHDOG_SLA_SECONDS: '8',
    PUSHDRAIN_WATCHDOG_MAX_CHECKS: '20',
    PUSHDRAIN_MAX_DEQUEUE_COUNT: '50',
    // A POST cut by a kill: the client's retry takes the dead request's claim over after 6 s, not 30.
    PUSHDRAIN_INGEST_CLAIM_STALE_SECONDS: '6',
    // The sweep re-notifies batches whose events were lost to a faulted publish.
    PUSHDRAIN_SWEEP_SCHEDULE: '*/5 * * * * *',
  });
});

after(async (t) => {
  // A graceful stop waits for in-flight invocations, and a publish caught in the SDK's reconnect
  // after a dropped connection can take its whole retry budget (4 tries × 10 s): allow for it.
  const code = await host?.stop(60_000);
  // CHAOS_HOST_LOG=<file> keeps the host's output for a post-mortem of a slow or failed run.
  if (process.env.CHAOS_HOST_LOG && host) writeFileSync(process.env.CHAOS_HOST_LOG, host.output());
  tally();
  ran.kills = host?.kills ?? 0;
  const storageTotal = Object.values(ran.storage).reduce((a, b) => a + b, 0);
  const say = 'diagnostic' in t ? (m: string): void => t.diagnostic(m) : (m: string): void => console.log(m);
  say(
    `chaos totals: ${ran.batches} batches, ${ran.transactions} transactions; ${host?.kills ?? 0} host kills; ` +
      `Service Bus: ${ran.serverBusy} ServerBusy sends, ${ran.detaches} detaches, ${ran.connectionDrops} connection drops; ` +
      `Storage (${storageTotal}): ${FAULT_KINDS.map((k) => `${k}=${ran.storage[k] ?? 0}`).join(' ')}; nothing lost, nothing double-counted`,
  );
  await proxy?.close();
  await bus?.close();
  await azurite?.stop();
  assert.equal(
    code,
    0,
    `the host stopped cleanly at the end\n--- host output ---\n${host?.output().slice(-4000) ?? ''}`,
  );
});

describe('chaos', () => {
  test('a crash between "result blob written" and "input message deleted": messages reappear after the visibility timeout and count once', async () => {
    const queues = QueueServiceClient.fromConnectionString(azurite.connectionString);
    let killed = false;
    // The map step writes the result blob, then sends the result pointer; kill the host on that send.
    proxy.inject('reset', {
      times: 1,
      match: (r) => {
        const hit =
          !killed && r.service === 'queue' && r.method === 'POST' && r.path.endsWith(`/${names.resultsQueue}/messages`);
        if (hit) {
          killed = true;
          void host.kill();
        }
        return hit;
      },
    });
    // Not awaited yet: the drain may start before the 202 is sent, so the kill can cut the
    // POST itself; the client's retry (same key) then gets its answer from the restarted host.
    const submitting = submit(`crash-${PREFIX}`, generate(2000, 401, 40));
    submitting.catch(() => {}); // awaited below; this only keeps an early failure from being "unhandled"
    for (let i = 0; !killed && i < 200; i++) await new Promise((r) => setTimeout(r, 100));
    assert.ok(killed, 'the host was killed between the result blob and the delete');
    // The drained input messages are invisible now; after the visibility timeout they are back.
    await new Promise((r) => setTimeout(r, VISIBILITY_SECONDS * 1000 + 800));
    let redelivered = 0;
    for (const q of names.inputQueues()) {
      const peeked = await queues.getQueueClient(q).peekMessages({ numberOfMessages: 32 });
      redelivered += peeked.peekedMessageItems.filter((m) => m.dequeueCount >= 1).length;
    }
    assert.ok(redelivered >= 1, 'messages received before the crash are visible again');
    await host.restart();
    await verify([await submitting], 90_000);
  });

  // CHAOS_SEEDS=5,6,7 soaks other seeds locally; CI runs the fixed four.
  const seeds = process.env.CHAOS_SEEDS ? process.env.CHAOS_SEEDS.split(',').map(Number) : [1, 2, 3, 4];
  for (const seed of seeds) {
    test(`seed ${seed}: storage faults, Service Bus faults and a host kill, while batches run`, async () => {
      const r = rng(seed);
      proxy.chaos({
        seed,
        rates: { status503: 0.02, status500: 0.01, reset: 0.01, stall: 0.002, dropAfterApply: 0.01 },
      });
      // Random faults may miss a kind; one scripted fault of each kind per seed makes coverage certain.
      for (const kind of FAULT_KINDS) proxy.inject(kind, { times: 1, skip: Math.floor(r() * 40) });
      const batches = await Promise.all(
        Array.from({ length: 3 }, (_, i) =>
          submit(`seed-${seed}-${i}-${PREFIX}`, generate(500 + Math.floor(r() * 2500), seed * 100 + i, 60)),
        ),
      );
      // Service Bus trouble at seeded moments while the drains run.
      await new Promise((res) => setTimeout(res, 200 + r() * 800));
      bus.broker.faults.serverBusy(3);
      ran.serverBusy += 3;
      await new Promise((res) => setTimeout(res, r() * 500));
      bus.broker.faults.detach('work-detected/Subscriptions/drain');
      ran.detaches++;
      if (seed % 2 === 0) {
        bus.broker.faults.dropConnections();
        ran.connectionDrops++;
      }
      // Kill the host mid-drain, then bring it back.
      await new Promise((res) => setTimeout(res, 300 + r() * 1200));
      await host.kill();
      await new Promise((res) => setTimeout(res, 200));
      await host.restart();
      await verify(batches, 120_000);
      tally();
      bus.broker.faults.reset();
    });
  }

  test('the seed list covered every fault kind', () => {
    tally();
    for (const k of FAULT_KINDS) assert.ok((ran.storage[k] ?? 0) >= 1, `storage fault ${k} was injected`);
    assert.ok(
      ran.serverBusy > 0 && ran.detaches > 0 && ran.connectionDrops > 0,
      'every Service Bus fault switch was used',
    );
    assert.ok(host.kills >= seeds.length + 1, 'the host was killed mid-drain in every scenario');
  });
});
