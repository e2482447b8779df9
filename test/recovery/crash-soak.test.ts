/**
 * Crash soak. `npm start` (dist/tools/devstack/start.js: the development broker embedded with its
 * journal, and Storage either embedded Azurite or an Azurite running outside the app) has its
 * whole process group SIGKILLed at seeded random moments: while a large body is uploading,
 * while ingest writes, right after the `202`, mid-drain, mid-aggregation, and during the
 * start-up recovery of an earlier kill. It is started again on the same data folder each time.
 * A POST cut by a kill is sent again with the same Idempotency-Key, as a client would. Every
 * batch answered `202` completes with a report equal to the independent computation, each
 * chunk counted once.
 *
 * CI runs one fixed seed per shape. Soak locally with CRASH_SEEDS=11,12,13 (each seed runs in
 * both shapes) and CRASH_STEPS=12 (kill steps per seed; default 6, one per phase).
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';

import { type Azurite, startAzurite } from '../../tools/devstack/azurite';
import { generate, rng } from '../../tools/testkit/generate';
import { expectedReport } from '../../tools/testkit/oracle';
import { slowBody, SoakBatch, statusOf, watchCompletions } from '../support/crash-client';
import { type HostEnv, type HostProcess, startHostProcess } from '../support/host-process';
import { scratchDir } from '../support/scratch-dir';
import { uniquePrefix } from '../support/storage';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Where a kill lands, in turn, so the CI seed covers every phase in each shape. The kills that
 * cut a POST come first: a retry that finds the dead request's claim waits until it is stale
 * (`409 ingest_in_progress`, PUSHDRAIN_INGEST_CLAIM_STALE_SECONDS), and that wait then overlaps the
 * later steps.
 */
const PHASES = ['upload', 'ingest', 'after-202', 'recovery', 'drain', 'aggregate'] as const;
type Phase = (typeof PHASES)[number];

const custom = process.env.CRASH_SEEDS?.split(',')
  .filter((s) => s.trim() !== '')
  .map(Number);
const SEEDS = { embedded: custom ?? [1], external: custom ?? [2] };
const STEPS = Number(process.env.CRASH_STEPS ?? PHASES.length);

/** Settings scaled down from production so a crash costs seconds: what a killed host held comes back soon. */
const SETTINGS: HostEnv = {
  PUSHDRAIN_CHUNK_SIZE: '400',
  PUSHDRAIN_VISIBILITY_TIMEOUT_SECONDS: '3',
  PUSHDRAIN_SWEEP_SCHEDULE: '*/5 * * * * *',
  PUSHDRAIN_STALL_SECONDS: '10',
  PUSHDRAIN_INGEST_CLAIM_STALE_SECONDS: '6',
};

const totals = {
  kills: 0,
  batches: 0,
  transactions: 0,
  cutPosts: 0,
  claimedWhenCut: 0,
  observed: {} as Record<string, number>,
  recoveries: [] as number[],
};
let outside: Azurite | undefined;
const live = new Set<HostProcess>();

before(async () => {
  outside = await startAzurite();
});

after(async (t) => {
  for (const h of live) await h.kill();
  await outside?.stop();
  const r = [...totals.recoveries].sort((a, b) => a - b);
  const say = 'diagnostic' in t ? (m: string): void => t.diagnostic(m) : (m: string): void => console.log(m);
  say(
    `crash soak: ${totals.kills} kills (${Object.entries(totals.observed)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')}), ` +
      `${totals.batches} batches, ${totals.transactions} transactions, ${totals.cutPosts} POSTs cut and sent again (${totals.claimedWhenCut} after their claim); ` +
      `restart to completion: min ${r[0] ?? '-'} ms, median ${r[Math.floor(r.length / 2)] ?? '-'} ms, max ${r.at(-1) ?? '-'} ms over ${r.length} recoveries`,
  );
});

const phaseCounter = { embedded: 0, external: 0 };

async function soak(shape: 'embedded' | 'external', seed: number): Promise<string> {
  const r = rng(seed);
  const between = (lo: number, hi: number): number => lo + Math.floor(r() * (hi - lo));
  const storage: HostEnv =
    shape === 'embedded'
      ? {
          StorageConnection: undefined,
          AzureWebJobsStorage: undefined,
          AZURITE_BLOB_PORT: '0',
          AZURITE_QUEUE_PORT: '0',
        }
      : { StorageConnection: outside!.connectionString, PUSHDRAIN_NAME_PREFIX: uniquePrefix() };
  const env: HostEnv = {
    ...storage,
    ...SETTINGS,
    ServiceBusConnection: undefined,
    SERVICEBUS_PORT: '0',
    PUSHDRAIN_DATA_DIR: scratchDir(`pd-soak-${shape}-${seed}-`),
  };
  const host = await startHostProcess(env, 0, 60_000, { processGroup: true });
  live.add(host);
  const batches: SoakBatch[] = [];
  const restarts: number[] = [];
  const observed: string[] = [];
  const watcher = watchCompletions(host, () => batches);

  /** Kills (unless `killed` is a kill already under way), records where it landed, starts the host again. */
  const crash = async (what: string, killed?: Promise<void>): Promise<void> => {
    await (killed ?? host.kill());
    observed.push(what);
    restarts.push(Date.now());
    await host.restart();
  };
  const newBatch = (size: number): SoakBatch => {
    const b = new SoakBatch(
      `soak-${shape}-${seed}-${batches.length}-${Date.now()}`,
      generate(size, seed * 1000 + batches.length, 80),
    );
    batches.push(b);
    return b;
  };
  /** A POST answered before the kill counts; one cut by it is sent again after the restart. */
  const settle = async (b: SoakBatch, res: Response | Error): Promise<boolean> => {
    if (!(res instanceof Error) && (await b.take(res))) return true;
    totals.cutPosts++;
    b.resubmit(host);
    return false;
  };
  const accept = async (b: SoakBatch): Promise<void> => {
    const res = await b.post(host);
    assert.ok(
      !(res instanceof Error) && (await b.take(res)),
      `${b.key}: accepted while the host is up (${res instanceof Error ? res.message : res.status})`,
    );
  };

  try {
    for (let step = 0; step < STEPS; step++) {
      const phase: Phase = PHASES[phaseCounter[shape]++ % PHASES.length]!;
      switch (phase) {
        case 'upload': {
          // Large enough that the body is still on its way when the kill lands.
          const b = newBatch(between(20_000, 30_000));
          const at = Math.floor(b.body.length * (0.15 + r() * 0.7));
          let killing: Promise<void> | undefined;
          const res = await b.post(
            host,
            slowBody(b.body, (sent) => void (sent >= at && (killing ??= host.kill()))),
          );
          await crash(killing ? 'upload' : 'upload (too late)', killing);
          await settle(b, res);
          break;
        }
        case 'ingest': {
          const b = newBatch(between(10_000, 20_000));
          const pending = b.post(host);
          await sleep(between(30, 900));
          const killed = host.kill();
          const res = await pending;
          await crash(res instanceof Error ? 'ingest' : 'after-202', killed);
          await settle(b, res);
          break;
        }
        case 'after-202': {
          await accept(newBatch(between(2_000, 8_000)));
          await crash('after-202');
          break;
        }
        case 'drain': {
          const b = newBatch(between(10_000, 16_000));
          await accept(b);
          await sleep(between(0, 200));
          const s = b.batchId ? await statusOf(host, b.batchId) : undefined;
          await crash(
            s?.status === 'completed' ? 'after completion' : (s?.chunksDone ?? 0) > 0 ? 'aggregate' : 'drain',
          );
          break;
        }
        case 'aggregate': {
          const b = newBatch(between(4_000, 10_000));
          await accept(b);
          const target = between(1, Math.max(2, b.chunks ?? 2));
          let s = await statusOf(host, b.batchId!);
          for (let i = 0; i < 2000 && s?.status !== 'completed' && (s?.chunksDone ?? 0) < target; i++) {
            await sleep(30);
            s = await statusOf(host, b.batchId!);
          }
          await crash(s?.status === 'completed' ? 'after completion' : 'aggregate');
          break;
        }
        case 'recovery': {
          // Another kill while the host is still recovering from the last one.
          if (step === 0) await accept(newBatch(between(2_000, 6_000)));
          await sleep(between(100, 2500));
          await crash('recovery');
          break;
        }
      }
      // Now and then a second kill soon after the restart: several kills for the same batch.
      if (r() < 0.3) {
        await sleep(between(200, 2000));
        await crash('recovery');
      }
    }

    for (const b of batches) await b.accepted();
    await host.until('every accepted batch to complete', 180_000, () => {
      assert.deepEqual(watcher.failures, [], 'no batch failed');
      return batches.every((b) => b.completedAt !== undefined) ? true : undefined;
    });
    await watcher.stop();

    for (const b of batches) {
      const s = await statusOf(host, b.batchId!);
      assert.equal(s?.chunksDone, s?.chunks, `${b.batchId}: every chunk counted`);
      assert.equal(s?.chunksFailed, 0, `${b.batchId}: no chunk failed`);
      const res = await fetch(`${host.base}/api/batches/${b.batchId}/report`);
      assert.equal(res.status, 200);
      const report = (await res.json()) as { transactions: number; rows: unknown[]; totals: unknown[] };
      const expected = expectedReport(b.txns);
      assert.equal(report.transactions, b.txns.length, `${b.batchId}: report transactions == submitted`);
      assert.deepEqual(
        report.totals,
        expected.totals,
        `${b.batchId}: totals (a chunk counted twice or lost would show here)`,
      );
      assert.deepEqual(report.rows, expected.rows, `${b.batchId}: rows`);
    }
    assert.equal(await host.stop(), 0, 'the host stopped cleanly at the end');
    live.delete(host);

    // Restart to completion, for each batch that was in flight at its last kill.
    const recoveries: number[] = [];
    for (const b of batches) {
      const restart = restarts.filter((t) => t < b.completedAt!).at(-1);
      if (restart !== undefined && b.submittedAt < restart) recoveries.push(b.completedAt! - restart);
    }
    totals.kills += host.kills;
    totals.batches += batches.length;
    totals.transactions += batches.reduce((n, b) => n + b.txns.length, 0);
    totals.claimedWhenCut += batches.filter((b) => b.inProgressAnswers > 0).length;
    totals.recoveries.push(...recoveries);
    for (const o of observed) totals.observed[o] = (totals.observed[o] ?? 0) + 1;
    return `${host.kills} kills (${observed.join(', ')}), ${batches.length} batches, ${batches.reduce((n, b) => n + b.txns.length, 0)} transactions; restart to completion ${recoveries.map((ms) => `${ms} ms`).join(', ')}`;
  } catch (e) {
    await watcher.stop();
    throw e;
  } finally {
    // CRASH_HOST_LOG=<prefix> keeps each host's output (all incarnations) for a post-mortem.
    if (process.env.CRASH_HOST_LOG) writeFileSync(`${process.env.CRASH_HOST_LOG}-${shape}-${seed}.log`, host.output());
  }
}

// The two shapes run side by side (their seeds one after the other): a kill during ingest costs
// the client up to 30 s of `409 ingest_in_progress`, and the file should stay short in CI.
describe('crash soak: npm start SIGKILLed as a whole at seeded moments', { concurrency: true }, () => {
  test('embedded Azurite and broker', async (t) => {
    for (const seed of SEEDS.embedded)
      await t.test(`seed ${seed}`, async (st) => st.diagnostic(await soak('embedded', seed)));
  });
  test('Storage outside the app (its own Azurite), embedded broker', async (t) => {
    for (const seed of SEEDS.external)
      await t.test(`seed ${seed}`, async (st) => st.diagnostic(await soak('external', seed)));
  });
});
