/**
 * The queue worker's probe and what a drain costs, against real Azurite, counted by the app's own
 * storage meter: work that fits in one receive takes no drain slot, and ends without a look at the
 * queue when it all settled (one look when a message failed, or the receive was empty); a full
 * receive, or a wake-up that joins, goes on with a slot and the re-check.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { PushdrainApp } from '../../shared/app';
import { drainOptions } from '../../shared/drain/drain-options';
import { QueueWorker } from '../../shared/drain/queue-worker';
import { type MessageProcessor, systemClock } from '../../shared/ports';
import { meterDelta, type MeterSnapshot } from '../../shared/storage/meter';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { completed, post, pump } from '../support/invoke';
import { leaseSlots, quietLog, testRuntime, useStorage } from '../support/storage';

useStorage();

/** Storage operations the app made while `fn` ran, without the `total` line. */
async function metered(app: PushdrainApp, fn: () => Promise<unknown>): Promise<MeterSnapshot> {
  const before = app.storageTransactions();
  await fn();
  const { total: _total, ...ops } = meterDelta(app.storageTransactions(), before);
  return Object.fromEntries(Object.entries(ops).filter(([, n]) => n !== 0));
}

function collecting(into: string[]): MessageProcessor {
  return { process: (m) => (into.push(m.text), Promise.resolve()) };
}

describe('the probe', () => {
  test('work that fits in one receive is drained without a slot: receive and deletes, no look', async () => {
    const { app, parts, raw } = await testRuntime();
    const name = parts.names.inputQueue(0);
    for (const t of ['a', 'b', 'c']) await raw.queue(name).sendMessage(t);
    const seen: string[] = [];
    const continuations: number[] = [];
    let outcome;
    let worker: QueueWorker | undefined;
    const slots = leaseSlots(parts.settings, 2);
    const ops = await metered(app, async () => {
      outcome = await (worker = new QueueWorker({
        queue: parts.queues.queue(name),
        processor: collecting(seen),
        slots,
        continuation: (d) => (continuations.push(d), Promise.resolve()),
        clock: systemClock,
        log: quietLog,
        options: drainOptions(parts.settings.tuning),
      })).wake();
    });
    assert.deepEqual(seen.sort(), ['a', 'b', 'c']);
    assert.deepEqual(ops, { 'queue.get': 1, 'queue.delete': 3 }, 'no look, no peek, no empty receives');
    assert.equal(slots.meter.total(), 0, 'no drain slot');
    assert.equal(outcome!.kind, 'drained');
    assert.equal(outcome!.kind === 'drained' && outcome!.rounds, 0, 'no slot round');
    assert.equal(worker!.total('processed'), 3, 'counted by the probe');
    assert.deepEqual(continuations, []);
  });

  test('a probe that leaves a failed message behind looks, and comes back for it after the visibility timeout', async () => {
    const { app, parts, raw } = await testRuntime();
    const name = parts.names.inputQueue(3);
    for (const t of ['ok', 'fails']) await raw.queue(name).sendMessage(t);
    const continuations: number[] = [];
    const proc: MessageProcessor = {
      process: (m) => (m.text === 'fails' ? Promise.reject(new Error('not yet')) : Promise.resolve()),
    };
    let outcome;
    const ops = await metered(app, async () => {
      outcome = await new QueueWorker({
        queue: parts.queues.queue(name),
        processor: proc,
        slots: leaseSlots(parts.settings, 2),
        continuation: (d) => (continuations.push(d), Promise.resolve()),
        clock: systemClock,
        log: quietLog,
        options: drainOptions(parts.settings.tuning),
      }).wake();
    });
    // The failed message is in flight (invisible): the look counts it and finds nothing visible.
    assert.deepEqual(ops, { 'queue.get': 1, 'queue.delete': 1, 'queue.metadata': 1, 'queue.peek': 1 });
    assert.deepEqual(continuations, [parts.settings.tuning.visibilityTimeoutSeconds * 1000]);
    assert.equal(outcome!.kind === 'drained' && outcome!.continuation, 'delayed');
  });

  test('an empty probe looks: what it found nothing of may be in flight with nobody else', async () => {
    const { app, parts } = await testRuntime();
    const name = parts.names.inputQueue(0);
    const continuations: number[] = [];
    const ops = await metered(app, () =>
      new QueueWorker({
        queue: parts.queues.queue(name),
        processor: collecting([]),
        slots: leaseSlots(parts.settings, 2),
        continuation: (d) => (continuations.push(d), Promise.resolve()),
        clock: systemClock,
        log: quietLog,
        options: drainOptions(parts.settings.tuning),
      }).wake(),
    );
    assert.deepEqual(ops, { 'queue.get': 1, 'queue.metadata': 1 });
    assert.deepEqual(continuations, []);
  });

  test('a full receive goes on with a slot, and the slot drain ends with the re-check', async () => {
    const { app, parts, raw } = await testRuntime({ PUSHDRAIN_DEQUEUE_BATCH_SIZE: '2' });
    const name = parts.names.inputQueue(1);
    for (let i = 0; i < 5; i++) await raw.queue(name).sendMessage(`m${i}`);
    const seen: string[] = [];
    let outcome;
    // The slots get a meter of their own (see leaseSlots), read here alongside the app's.
    const slots = leaseSlots(parts.settings, 2);
    const slotsBefore = slots.meter.snapshot();
    const ops = await metered(app, async () => {
      outcome = await new QueueWorker({
        queue: parts.queues.queue(name),
        processor: collecting(seen),
        slots,
        continuation: () => Promise.resolve(),
        clock: systemClock,
        log: quietLog,
        options: drainOptions(parts.settings.tuning),
      }).wake();
    });
    const slotOps = meterDelta(slots.meter.snapshot(), slotsBefore);
    assert.equal(seen.length, 5);
    assert.equal(outcome!.kind === 'drained' && outcome!.rounds, 1);
    // Probe: 1 receive (full). Slot round: receives 2 (full), then the task it started and the
    // first share what is left, until each comes back short. The first full receive reads the
    // depth once to size the group; the re-check reads it again and finds 0 (no peek).
    assert.ok((ops['queue.get'] ?? 0) >= 4, `receives: ${ops['queue.get']}`);
    assert.equal(ops['queue.delete'], 5);
    assert.equal(ops['queue.metadata'], 2);
    // The slot's first use: acquire (404), create its blob, acquire; then the release.
    assert.deepEqual([slotOps['blob.lease'], slotOps['blob.put']], [3, 1], 'the slot: taken once, released once');
    assert.equal(ops['queue.peek'], undefined);
  });

  test('a wake-up that joins during the probe makes it go on with a slot', async () => {
    const { parts, raw } = await testRuntime();
    const name = parts.names.inputQueue(2);
    const client = raw.queue(name);
    await client.sendMessage('first');
    const seen: string[] = [];
    let joined: boolean | undefined;
    const proc: MessageProcessor = {
      process: async (m) => {
        seen.push(m.text);
        if (m.text !== 'first') return;
        // A producer enqueues while the probe processes; its wake-up joins this drain.
        await client.sendMessage('joined-work');
        joined = worker.join();
      },
    };
    const worker: QueueWorker = new QueueWorker({
      queue: parts.queues.queue(name),
      processor: proc,
      slots: leaseSlots(parts.settings, 2),
      continuation: () => Promise.resolve(),
      clock: systemClock,
      log: quietLog,
      options: drainOptions(parts.settings.tuning),
    });
    const outcome = await worker.wake();
    assert.equal(joined, true, 'the probe accepted the join');
    assert.deepEqual(seen, ['first', 'joined-work'], 'and saw the joined work');
    assert.equal(outcome.kind === 'drained' && outcome.rounds, 1, 'with a slot');
    assert.equal(worker.join(), false, 'a finished drain takes no more joins');
  });
});

describe('what a small batch costs', () => {
  test('a 1,000-transaction batch: 12 storage transactions from POST to report', async () => {
    const { app, events, observer } = await testRuntime();
    const run = async (seed: number): Promise<MeterSnapshot> =>
      metered(app, async () => {
        const res = await post(app, toNdjson(generate(1000, seed, 50)));
        assert.equal(res.status, 202);
        const { batchId } = res.jsonBody as { batchId: string };
        await pump(app, events, () => completed(observer, batchId), 30_000);
      });
    await run(71); // first use of the app's clients
    const ops = await run(72);
    assert.deepEqual(ops, {
      // ingest: claim, chunk, open-index marker, accept; map: result, report, completed manifest
      'blob.put': 7,
      // the open-index marker, once the batch is completed (recovery's index; docs/DESIGN.md)
      'blob.delete': 1,
      // map: the chunk (the fold reads neither the result header nor the manifest: this process
      // wrote both, and the manifest write's If-Match proves the version it knew current)
      'blob.get': 1,
      // the pointer, one receive, one delete: the batch's only chunk is folded by the map step,
      // with no round trip through the results queue
      'queue.put': 1,
      'queue.get': 1,
      'queue.delete': 1,
      // no closing look: the drain's probe settled all it took
    });
  });
});
