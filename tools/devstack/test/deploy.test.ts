/**
 * A deploy mid-batch, as Flex Consumption's rolling update runs one: `npm start` of the previous
 * commit (HEAD~1, the previous main commit; support/previous-build.ts) and of this tree at once, on
 * the same Azurite and the same development broker, so that both drain the same queues and take
 * the same events. The old one starts alone and is folding its first batch when the new one
 * joins; batches are in flight on both when the old one gets SIGTERM (what a deploy sends), and
 * SIGKILL if it is still there 3 s later. Every batch must complete with the
 * report the independent computation gives (a chunk lost or folded twice would show), nothing may
 * reach a poison queue or a dead-letter queue. Billing a chunk again whose message the killed
 * instance held is what the crash promise allows (at least once, folded once: the report would
 * show a chunk folded twice), so it is not counted here.
 *
 * When the previous commit's package.json or lock file differ from this tree's, it would need an
 * install of its own, which a test does not make: the test says so in one line and skips; so it
 * does when the clone has no previous commit (CI fetches two: .github/workflows/ci.yml).
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';

import { ServiceBusClient } from '@azure/service-bus';
import { QueueServiceClient } from '@azure/storage-queue';

import { entityNames, SUBSCRIPTIONS, TOPIC } from '../../../shared/names';
import { startTestBroker } from '../../../test/support/broker';
import { type HostProcess, startHostProcess } from '../../../test/support/host-process';
import { repoRoot } from '../../../test/support/repo';
import { scratchDir } from '../../../test/support/scratch-dir';
import { uniquePrefix } from '../../../test/support/storage';
import { generate, toNdjson } from '../../testkit/generate';
import { expectedReport } from '../../testkit/oracle';
import { startAzurite } from '../azurite';
import { buildPrevious } from './support/previous-build';

const stops: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const stop of stops.reverse()) await stop();
});

interface Batch {
  batchId: string;
  status: string;
  chunks: number;
}

interface BatchProgress extends Batch {
  chunksDone: number;
}

async function post(host: HostProcess, txns: ReturnType<typeof generate>): Promise<Batch> {
  const res = await fetch(`${host.base}/api/batches`, {
    method: 'POST',
    body: toNdjson(txns),
    headers: { 'Content-Type': 'application/x-ndjson' },
  });
  assert.equal(res.status, 202, await res.clone().text());
  return (await res.json()) as Batch;
}

async function waitForEnd(host: HostProcess, batchId: string, timeoutMs: number): Promise<Batch> {
  const deadline = Date.now() + timeoutMs;
  let last: Batch | undefined;
  for (let i = 0; i < 2_000 && Date.now() < deadline; i++) {
    const res = await fetch(`${host.base}/api/batches/${batchId}`);
    assert.equal(res.status, 200, `GET /api/batches/${batchId}`);
    last = (await res.json()) as Batch;
    if (last.status === 'completed' || last.status === 'failed') return last;
    await new Promise((r) => setTimeout(r, 250));
  }
  return assert.fail(`batch ${batchId} did not finish within ${timeoutMs} ms: ${JSON.stringify(last)}`);
}

/** Until the process has exited (bounded), else SIGKILL: a deploy's stop, then its kill. */
async function stopThenKill(host: HostProcess, graceMs: number): Promise<'exited' | 'killed'> {
  const pid = host.pid;
  assert.ok(pid !== undefined);
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    try {
      process.kill(pid, 0);
    } catch {
      return 'exited';
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  await host.kill();
  return 'killed';
}

describe('a deploy mid-batch: the previous commit and this tree side by side', () => {
  test('batches in flight while the old instance is stopped and killed all complete exactly; nothing is poisoned', async (t) => {
    const started = Date.now();
    const previous = buildPrevious(repoRoot(), scratchDir('pd-previous-'));
    if ('skip' in previous) {
      t.skip(`deploy test: ${previous.skip}`);
      return;
    }
    const prefix = uniquePrefix();
    const [azurite, bus] = await Promise.all([startAzurite(), startTestBroker()]);
    stops.push(
      () => azurite.stop(),
      () => bus.close(),
    );
    const partitions = 2;
    const env = {
      StorageConnection: azurite.connectionString,
      ServiceBusConnection: bus.broker.connectionString,
      PUSHDRAIN_NAME_PREFIX: prefix,
      PUSHDRAIN_PARTITIONS: String(partitions),
      // A message the killed instance held is visible again after this.
      PUSHDRAIN_VISIBILITY_TIMEOUT_SECONDS: '3',
      // Only the batches' own events drive them: no sweep, no watchdog in the test's window.
      PUSHDRAIN_SWEEP_SCHEDULE: '0 0 0 1 1 *',
      PUSHDRAIN_WATCHDOG_SLA_SECONDS: '3600',
      // Many small chunks, so each instance is mid-batch when the old one stops.
      PUSHDRAIN_CHUNK_SIZE: '100',
    };
    const old = await startHostProcess(env, 0, 60_000, { root: previous.dir });
    stops.push(() => old.stop(5_000));
    // The third, sent to the old instance as the new one joins, has 200 chunks: still in flight when
    // the old one stops, however long the new one took to start (beside two busy loops, the first
    // two and a smaller third had all completed by then).
    const sent = [3_000, 2_500, 20_000, 1_500].map((n, i) => generate(n, 5400 + i, 60));
    // Before the deploy: the old instance alone, working on two batches.
    const batches = [await post(old, sent[0]!), await post(old, sent[1]!)];
    await old.until('the old instance to fold a chunk', 60_000, async () => {
      const s = (await (await fetch(`${old.base}/api/batches/${batches[0]!.batchId}`)).json()) as BatchProgress;
      return s.chunksDone > 0 ? true : undefined;
    });
    // The rolling update: a new instance joins, and both take batches, until the old one is stopped.
    const current = await startHostProcess(env, 0, 60_000);
    stops.push(() => current.stop(5_000));
    batches.push(...(await Promise.all([post(old, sent[2]!), post(current, sent[3]!)])));
    const statuses = await Promise.all(
      batches.map(
        async (b) => ((await (await fetch(`${current.base}/api/batches/${b.batchId}`)).json()) as Batch).status,
      ),
    );
    assert.ok(
      statuses.some((s) => s !== 'completed'),
      `work in flight when the old instance stops: ${statuses.join(', ')}`,
    );
    const oldStop = await stopThenKill(old, 3_000);

    for (const [i, b] of batches.entries()) {
      const end = await waitForEnd(current, b.batchId, 90_000);
      assert.equal(end.status, 'completed', `batch ${i} (${b.chunks} chunks)`);
      const report = (await (await fetch(`${current.base}/api/batches/${b.batchId}/report`)).json()) as {
        transactions: number;
        totals: unknown[];
        rows: unknown[];
      };
      const expected = expectedReport(sent[i]!);
      assert.equal(report.transactions, sent[i]!.length, `batch ${i}`);
      assert.deepEqual(report.totals, expected.totals, `batch ${i}: a chunk lost or folded twice would show here`);
      assert.deepEqual(report.rows, expected.rows);
    }

    const names = entityNames(prefix, partitions);
    const queues = QueueServiceClient.fromConnectionString(azurite.connectionString);
    for (const q of [...names.inputQueues(), names.resultsQueue]) {
      const poisoned = (await queues.getQueueClient(names.poisonQueue(q)).peekMessages({ numberOfMessages: 32 }))
        .peekedMessageItems;
      assert.deepEqual(
        poisoned.map((m) => m.messageText.slice(0, 300)),
        [],
        `${names.poisonQueue(q)} holds nothing`,
      );
    }
    const sb = new ServiceBusClient(bus.broker.connectionString);
    try {
      for (const sub of [SUBSCRIPTIONS.drain.name, SUBSCRIPTIONS.aggregate.name]) {
        const dlq = sb.createReceiver(TOPIC, sub, { subQueueType: 'deadLetter' });
        assert.deepEqual(await dlq.peekMessages(10), [], `no dead letter on ${sub}`);
        await dlq.close();
      }
    } finally {
      await sb.close();
    }
    const processedBy = (host: HostProcess): number =>
      [...host.output().matchAll(/drain round \d+: (\d+) processed/g)].reduce((n, m) => n + Number(m[1]), 0);
    t.diagnostic(
      `deploy test: previous ${previous.commit.slice(0, 12)} built in ${previous.ms} ms; old instance ${oldStop} on SIGTERM; ` +
        `messages processed: old ${processedBy(old)}, current ${processedBy(current)} (drain rounds the hosts logged); ` +
        `${batches.reduce((n, b) => n + b.chunks, 0)} chunks in ${batches.length} batches; ${Date.now() - started} ms in all`,
    );
  });
});
