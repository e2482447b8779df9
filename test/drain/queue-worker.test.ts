/**
 * The queue worker (shared/drain/queue-worker.ts) against real Azurite queues and blob leases:
 * duplicate delivery, the visibility timeout, the lost wake-up, drain slots, and the time budget.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { Report } from '../../shared/billing/report';
import type { AppParts } from '../../shared/compose/app-parts';
import { drainOptions } from '../../shared/drain/drain-options';
import { QueueWorker } from '../../shared/drain/queue-worker';
import { type DrainQueue, type DrainSlots, type MessageProcessor, systemClock } from '../../shared/ports';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { expectedReport } from '../../tools/testkit/oracle';
import { completed, post, pump, report } from '../support/invoke';
import { leaseSlots, quietLog, type RawStorage, testRuntime, useStorage } from '../support/storage';

useStorage();

/** Re-sends a copy of every visible message of a queue: a duplicate delivery of each. */
async function duplicateAll(raw: RawStorage, queue: string): Promise<number> {
  const client = raw.queue(queue);
  const peeked = await client.peekMessages({ numberOfMessages: 32 });
  for (const m of peeked.peekedMessageItems) await client.sendMessage(m.messageText);
  return peeked.peekedMessageItems.length;
}

function queueOf(parts: AppParts, name: string): DrainQueue {
  return parts.queues.queue(name);
}

function options(parts: AppParts, budgetMs = 30_000) {
  return { ...drainOptions(parts.settings.tuning), budgetMs };
}

describe('at-least-once delivery', () => {
  test('duplicate input and result messages do not change the report', async () => {
    const { app, parts, events, observer, raw, observerParts } = await testRuntime({
      PUSHDRAIN_CHUNK_SIZE: '50',
      PUSHDRAIN_PARTITIONS: '2',
    });
    const txns = generate(1000, 21, 40);
    const res = await post(app, toNdjson(txns));
    assert.equal(res.status, 202);
    const { batchId } = res.jsonBody as { batchId: string };
    // Every input pointer delivered twice.
    let dup = 0;
    for (const q of parts.names.inputQueues()) dup += await duplicateAll(raw, q);
    assert.equal(dup, 20);
    // Drain inputs only (hold back the aggregate events), then duplicate every result pointer.
    const held = events.take();
    for (const c of held.filter((c) => c.event.role === 'input')) await app.drain(c.event);
    const resultsQueued = (await raw.queue(parts.names.resultsQueue).getProperties()).approximateMessagesCount;
    assert.equal(resultsQueued, 40, 'each duplicated input produced a result pointer');
    await duplicateAll(raw, parts.names.resultsQueue);
    await duplicateAll(raw, parts.names.resultsQueue); // the peek caps at 32: add the rest too
    await pump(app, events, () => completed(observer, batchId), 60_000);
    const m = (await observerParts.manifests.read(batchId))!.manifest;
    assert.equal(m.state, 'completed');
    assert.deepEqual(
      m.done,
      Array.from({ length: 20 }, (_, i) => i),
    );
    const got = (await report(observer, batchId)).jsonBody as Report;
    const expected = expectedReport(txns);
    assert.deepEqual(got.rows, expected.rows);
    assert.deepEqual(got.totals, expected.totals);
  });

  test('a failed processor leaves the message to reappear after its visibility timeout', async () => {
    const { parts, raw } = await testRuntime({ PUSHDRAIN_VISIBILITY_TIMEOUT_SECONDS: '1' });
    const name = parts.names.inputQueue(0);
    await raw.queue(name).sendMessage('{"hello":1}');
    const q = queueOf(parts, name);
    let calls = 0;
    const flaky: MessageProcessor = {
      process: () => (++calls === 1 ? Promise.reject(new Error('transient boom')) : Promise.resolve()),
    };
    const continuations: number[] = [];
    const slots = leaseSlots(parts.settings, 1);
    const first = await new QueueWorker({
      queue: q,
      processor: flaky,
      slots,
      continuation: (d) => (continuations.push(d), Promise.resolve()),
      clock: systemClock,
      log: quietLog,
      options: options(parts),
    }).wake();
    assert.equal(first.kind, 'drained');
    assert.equal(calls, 1);
    assert.equal(await q.hasVisible(), false, 'invisible while its visibility timeout runs');
    assert.equal(await q.depth(), 1, 'but not deleted');
    // Nothing visible yet something queued: the drain schedules its own wake-up for when it reappears.
    assert.deepEqual(continuations, [1000]);
    await new Promise((r) => setTimeout(r, 1300));
    const peeked = await raw.queue(name).peekMessages();
    assert.equal(peeked.peekedMessageItems[0]?.dequeueCount, 1);
    const second = await new QueueWorker({
      queue: q,
      processor: flaky,
      slots,
      continuation: () => Promise.resolve(),
      clock: systemClock,
      log: quietLog,
      options: options(parts),
    }).wake();
    assert.equal(second.kind, 'drained');
    assert.equal(calls, 2);
    assert.equal(await q.depth(), 0, 'processed and deleted on redelivery');
  });
});

describe('drain slots and the lost wake-up', () => {
  test('work enqueued while the last task exits is drained by the re-check after release', async () => {
    // Batches of one: a single message is a full receive, so the probe goes on to a slot drain,
    // and the late wake-up's own probe (one message) cannot take all of its work.
    const { parts, raw } = await testRuntime({ PUSHDRAIN_DRAIN_SLOTS: '1', PUSHDRAIN_DEQUEUE_BATCH_SIZE: '1' });
    const name = parts.names.inputQueue(0);
    const client = raw.queue(name);
    const q = queueOf(parts, name);
    const processed: string[] = [];
    const proc: MessageProcessor = { process: (m) => (processed.push(m.text), Promise.resolve()) };
    const real = leaseSlots(parts.settings, 1);
    let secondWakeUp: string | undefined;
    const busyContinuations: number[] = [];
    let forced = false;
    // Every task has exited and the slot is still held: exactly then, a producer enqueues and
    // its event's wake-up arrives, probes, finds more than one receive's worth, finds the only
    // slot taken, and returns.
    const interleaving: DrainSlots = {
      holdLimitMs: real.holdLimitMs,
      acquire: async (queue) => {
        const held = await real.acquire(queue);
        if (!held) return undefined;
        return {
          id: held.id,
          index: held.index,
          release: async () => {
            if (!forced) {
              forced = true;
              await client.sendMessage('late-work-1');
              await client.sendMessage('late-work-2');
              const other = await new QueueWorker({
                queue: q,
                processor: proc,
                slots: real,
                continuation: (d) => (busyContinuations.push(d), Promise.resolve()),
                clock: systemClock,
                log: quietLog,
                options: options(parts),
              }).wake();
              secondWakeUp = other.kind;
            }
            await held.release();
          },
        };
      },
    };
    await client.sendMessage('early-work');
    const outcome = await new QueueWorker({
      queue: q,
      processor: proc,
      slots: interleaving,
      continuation: () => Promise.resolve(),
      clock: systemClock,
      log: quietLog,
      options: options(parts),
    }).wake();
    assert.equal(secondWakeUp, 'slots-busy', 'the second wake-up found the slot held and left');
    assert.deepEqual(
      busyContinuations,
      [31_000],
      'leaving a look-again one slot lease (30 s) and 1 s ahead, in case the holder had crashed',
    );
    assert.equal(outcome.kind, 'drained');
    assert.equal(outcome.kind === 'drained' && outcome.rounds, 2, 'the re-check found the late work and drained again');
    assert.deepEqual(
      processed,
      ['early-work', 'late-work-1', 'late-work-2'],
      'the late probe took one, the re-check the other',
    );
    assert.equal(await q.depth(), 0, 'nothing left in the queue');
  });

  test('a wake-up during a stopping round is joined and covered by the closing look, which hands it over', async () => {
    // The join window is open from the round's slot request to its closing look, also after the
    // round began to stop (the host's shutdown): the look reads the queue after the join and
    // finds the joined work, and a stopping drain hands it over as a continuation.
    const { parts, raw } = await testRuntime({ PUSHDRAIN_MAX_DEQUEUE_TASKS: '1', PUSHDRAIN_DEQUEUE_BATCH_SIZE: '1' });
    const name = parts.names.inputQueue(2);
    const client = raw.queue(name);
    const shutdown = new AbortController();
    const continuations: number[] = [];
    const processed: string[] = [];
    let joined: string | undefined;
    let worker: QueueWorker | undefined = undefined;
    const proc: MessageProcessor = {
      process: async (m) => {
        processed.push(m.text);
        // A receive of one is full, so the probe's message is the first and the round's the second.
        if (processed.length !== 2) return;
        shutdown.abort();
        worker!.stop();
        await client.sendMessage('late');
        joined = (await worker!.wake()).kind;
      },
    };
    worker = new QueueWorker({
      queue: queueOf(parts, name),
      processor: proc,
      slots: leaseSlots(parts.settings, 1),
      continuation: (d) => (continuations.push(d), Promise.resolve()),
      clock: systemClock,
      log: quietLog,
      options: { ...drainOptions(parts.settings.tuning, shutdown.signal), budgetMs: 30_000 },
    });
    await client.sendMessage('a');
    await client.sendMessage('b');
    const outcome = await worker.wake();
    assert.equal(joined, 'joined', 'the wake-up joined the stopping round');
    assert.equal(outcome.kind, 'drained');
    assert.equal(outcome.kind === 'drained' && outcome.rounds, 1, 'one slot round');
    assert.equal(outcome.kind === 'drained' && outcome.continuation, 'now', 'the closing look handed the work over');
    assert.deepEqual(continuations, [0]);
    assert.deepEqual(processed.sort(), ['a', 'b'], 'the stopping round took no more');
    assert.equal(
      (await client.getProperties()).approximateMessagesCount,
      1,
      "the joined wake-up's work waits for the continuation",
    );
  });

  test('slots bound concurrent drains per queue', async () => {
    const { parts } = await testRuntime({ PUSHDRAIN_DRAIN_SLOTS: '2' });
    const slots = leaseSlots(parts.settings, 2);
    const a = await slots.acquire('work-x');
    const b = await slots.acquire('work-x');
    const c = await slots.acquire('work-x');
    assert.ok(a && b);
    assert.notEqual(a.id, b.id);
    assert.equal(c, undefined, 'a third drain is refused');
    assert.ok(await slots.acquire('work-y'), 'slots are per queue');
    await a.release();
    const d = await slots.acquire('work-x');
    assert.equal(d?.id, a.id, 'a released slot is taken again');
    await b.release();
    await d?.release();
  });

  test('the time budget stops the drain and hands the rest over with a continuation', async () => {
    const { parts, raw } = await testRuntime({ PUSHDRAIN_MAX_DEQUEUE_TASKS: '1', PUSHDRAIN_DEQUEUE_BATCH_SIZE: '2' });
    const name = parts.names.inputQueue(1);
    const client = raw.queue(name);
    for (let i = 0; i < 20; i++) await client.sendMessage(`m${i}`);
    const slow: MessageProcessor = { process: () => new Promise((r) => setTimeout(r, 60)) };
    const continuations: number[] = [];
    const outcome = await new QueueWorker({
      queue: queueOf(parts, name),
      processor: slow,
      slots: leaseSlots(parts.settings, 1),
      continuation: (d) => (continuations.push(d), Promise.resolve()),
      clock: systemClock,
      log: quietLog,
      options: options(parts, 250),
    }).wake();
    assert.equal(outcome.kind, 'drained');
    assert.equal(outcome.kind === 'drained' && outcome.continuation, 'now');
    assert.deepEqual(continuations, [0]);
    const left = (await client.getProperties()).approximateMessagesCount ?? 0;
    assert.ok(left > 0 && left < 20, `some work done, the rest handed over (${left} left)`);
  });
});
