/**
 * The drain under overload, against real Azurite and real blob leases: one listener on the
 * shutdown signal however many drains run; a message kept invisible while in work; a message
 * taken by another delivery counted as a duplicate, not logged; a lost slot lease stops the
 * drain taking messages; receives sized from the rate the whole process settles messages at,
 * so that tasks sharing it hold no more than it can finish; the counters in the coordinator's
 * activity (GET /api/health) and its hook.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { getEventListeners } from 'node:events';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';

import { DrainCoordinator } from '../../shared/drain/coordinator';
import { drainOptions } from '../../shared/drain/drain-options';
import { QueueWorker } from '../../shared/drain/queue-worker';
import { ReceiveSizer } from '../../shared/drain/receive-sizer';
import { TaskGroup, type TaskOptions } from '../../shared/drain/task-group';
import { type DrainQueue, type Logger, type MessageProcessor, systemClock } from '../../shared/ports';
import { leaseSlots, quietLog, storageUp, testRuntime, useStorage } from '../support/storage';

useStorage();

function capturingLog(): Logger & { lines: string[] } {
  const lines: string[] = [];
  return {
    lines,
    info: () => {},
    warn: (m) => lines.push(`warn ${m}`),
    error: (m) => lines.push(`error ${m}`),
  };
}

function taskOptions(over: Partial<TaskOptions>): TaskOptions {
  return {
    batchSize: 8,
    visibilityTimeoutSeconds: 30,
    minIdleMs: 10,
    maxIdleMs: 200,
    maxTasks: 1,
    maxDequeueCount: 5,
    deadline: Date.now() + 60_000,
    ...over,
  };
}

/** The queue without visibility extension: what a drain held before this change. */
function withoutExtension(q: DrainQueue): DrainQueue {
  return {
    name: q.name,
    receive: (n, v) => q.receive(n, v),
    delete: (m) => q.delete(m),
    depth: () => q.depth(),
    hasVisible: () => q.hasVisible(),
    poison: (m, r) => q.poison(m, r),
  };
}

/**
 * A processor whose one message takes `workMs` while another receiver polls the queue every
 * `gapMs` (as another instance would): `othersGot` counts what that receiver was given.
 */
function workWhileOthersPoll(
  other: {
    receiveMessages(o: {
      numberOfMessages: number;
      visibilityTimeout: number;
    }): Promise<{ receivedMessageItems: unknown[] }>;
  },
  workMs: number,
  gapMs: number,
): { processor: MessageProcessor; othersGot: () => number; done: () => Promise<void> } {
  let got = 0;
  let polling = true;
  let poller: Promise<void> = Promise.resolve();
  const processor: MessageProcessor = {
    process: async () => {
      poller = (async () => {
        for (let i = 0; i < 100 && polling; i++) {
          got += (await other.receiveMessages({ numberOfMessages: 1, visibilityTimeout: 30 })).receivedMessageItems
            .length;
          await sleep(gapMs);
        }
      })();
      await sleep(workMs);
      polling = false;
    },
  };
  return { processor, othersGot: () => got, done: () => poller };
}

describe('the shutdown signal', () => {
  test('many drains at once, round after round, hold one listener on it and leave none', async () => {
    const { parts, raw } = await testRuntime({ PUSHDRAIN_DEQUEUE_BATCH_SIZE: '1' });
    const name = parts.names.inputQueue(0);
    const shutdown = new AbortController();
    const warnings: string[] = [];
    const onWarning = (w: Error): void => void warnings.push(`${w.name}: ${w.message}`);
    process.on('warning', onWarning);
    const slots = leaseSlots(parts.settings, 16);
    const counts: number[] = [];
    const processor: MessageProcessor = {
      process: async () => {
        counts.push(getEventListeners(shutdown.signal, 'abort').length);
        await sleep(20);
      },
    };
    try {
      for (let round = 0; round < 4; round++) {
        for (let i = 0; i < 48; i++) await raw.queue(name).sendMessage(`m${i}`);
        // 12 drains of one queue at once: before, each task group put a listener of its own on
        // the signal (12 > 10: MaxListenersExceededWarning).
        await Promise.all(
          Array.from({ length: 12 }, () =>
            new QueueWorker({
              queue: parts.queues.queue(name),
              processor,
              slots,
              continuation: () => Promise.resolve(),
              clock: systemClock,
              log: quietLog,
              options: { ...drainOptions(parts.settings.tuning, shutdown.signal), maxTasks: 1 },
            }).wake(),
          ),
        );
        counts.push(getEventListeners(shutdown.signal, 'abort').length);
      }
    } finally {
      process.off('warning', onWarning);
    }
    assert.ok(counts.length >= 4 * 48, `every message was processed (${counts.length} samples)`);
    assert.equal(Math.max(...counts), 1, 'one listener however many task groups run');
    assert.equal(getEventListeners(shutdown.signal, 'abort').length, 0, 'none left after the drains');
    assert.deepEqual(
      warnings.filter((w) => w.includes('MaxListeners')),
      [],
    );
  });
});

describe('visibility while in work', () => {
  test('a message held past 40 % of its timeout is extended: nobody else receives it, one delete', async () => {
    const { parts, raw } = await testRuntime();
    const name = parts.names.inputQueue(0);
    await raw.queue(name).sendMessage('slow');
    // 2.5 visibility timeouts of work, while another receiver polls the queue.
    const { processor, othersGot, done } = workWhileOthersPoll(raw.queue(name), 2_500, 100);
    const log = capturingLog();
    const tasks = new TaskGroup({
      queue: parts.queues.queue(name),
      processor,
      clock: systemClock,
      log,
      options: taskOptions({ visibilityTimeoutSeconds: 1 }),
    });
    const stats = await tasks.run(1);
    await done();
    assert.equal(othersGot(), 0, 'kept invisible throughout');
    assert.equal(stats.processed, 1);
    assert.equal(stats.duplicates, 0);
    assert.ok(stats.extensions >= 3, `extended every 0.4 s (${stats.extensions})`);
    assert.equal((await raw.queue(name).getProperties()).approximateMessagesCount, 0, 'deleted with the new receipt');
    assert.deepEqual(log.lines, []);
  });
  test('a slow answer to an extension does not delay the next one: it is due 40 % after the send', async () => {
    const { parts, raw } = await testRuntime();
    const name = parts.names.inputQueue(0);
    await raw.queue(name).sendMessage('slow answers');
    const q = parts.queues.queue(name);
    const sent: number[] = [];
    const answered: number[] = [];
    // The store applies each update at once, but its answer takes 1.2 s of a 2 s timeout. Were the
    // next update due 40 % (0.8 s) after the answer, it would go out 2 s after the last one was
    // applied, as the message reappears. Due 0.8 s after the send, it is overdue when the answer
    // comes, and goes out at once.
    const slowAnswers: DrainQueue = Object.assign(Object.create(q) as DrainQueue, {
      extend: async (m: Parameters<DrainQueue['delete']>[0], v: number) => {
        sent.push(Date.now());
        await q.extend!(m, v);
        await sleep(1_200);
        answered.push(Date.now());
      },
    });
    const { processor, othersGot, done } = workWhileOthersPoll(raw.queue(name), 5_000, 50);
    const stats = await new TaskGroup({
      queue: slowAnswers,
      processor,
      clock: systemClock,
      log: quietLog,
      options: taskOptions({ visibilityTimeoutSeconds: 2 }),
    }).run(1);
    await done();
    assert.equal(othersGot(), 0, 'kept invisible throughout');
    assert.equal(stats.duplicates, 0);
    assert.equal(stats.processed, 1);
    // From each answer to the next send: timers never fire early, so an update due 0.8 s after
    // the answer could not go out sooner; one due after the send goes out within a loop turn.
    const afterAnswer = sent.slice(1).map((t, i) => t - answered[i]!);
    assert.ok(afterAnswer.length >= 2, `several extensions (${sent.length})`);
    assert.ok(
      afterAnswer.every((g) => g < 800),
      `each sent as soon as the last answer came, not 0.8 s after it (${afterAnswer.join(', ')} ms after the answers)`,
    );
  });
});

describe('a message taken by another delivery', () => {
  for (const other of ['received it', 'received and deleted it'] as const)
    test(`when another delivery ${other}, it is a duplicate, not an error line`, async () => {
      const { parts, raw } = await testRuntime();
      const name = parts.names.inputQueue(0);
      await raw.queue(name).sendMessage('late');
      const processor: MessageProcessor = {
        process: async () => {
          // Our timeout (1 s) runs out while we work: the message reappears and someone takes it.
          await sleep(1_300);
          const got = await raw.queue(name).receiveMessages({ numberOfMessages: 1, visibilityTimeout: 30 });
          const m = got.receivedMessageItems[0];
          assert.ok(m, 'the message reappeared for another delivery');
          if (other === 'received and deleted it') await raw.queue(name).deleteMessage(m.messageId, m.popReceipt);
        },
      };
      const log = capturingLog();
      const stats = await new TaskGroup({
        queue: withoutExtension(parts.queues.queue(name)),
        processor,
        clock: systemClock,
        log,
        options: taskOptions({ visibilityTimeoutSeconds: 1 }),
      }).run(1);
      assert.equal(stats.duplicates, 1);
      assert.equal(stats.processed, 0);
      assert.deepEqual(log.lines, [], 'no error or warning line per message');
    });

  test('a starved event loop (a long CPU step) loses the message to another process: counted in the activity and the hook', async () => {
    const azurite = await storageUp();
    const { parts, raw } = await testRuntime({ PUSHDRAIN_VISIBILITY_TIMEOUT_SECONDS: '1' });
    const name = parts.names.inputQueue(0);
    // Another instance: a separate process that takes whatever becomes visible.
    // It starts taking only when told, once our drain holds the message: were it polling from the
    // start, it could take the message before our drain ever received it.
    const script = `
      const { QueueClient } = require('@azure/storage-queue');
      const q = new QueueClient(process.argv[1], process.argv[2]);
      console.log('ready');
      process.stdin.once('data', async () => {
        for (let i = 0; i < 200; i++) {
          const got = await q.receiveMessages({ numberOfMessages: 1, visibilityTimeout: 30 });
          if (got.receivedMessageItems.length) { console.log('got'); process.exit(0); }
          await new Promise((r) => setTimeout(r, 100));
        }
        process.exit(0);
      });`;
    const child = spawn(process.execPath, ['-e', script, azurite.connectionString, name], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    let out = '';
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    for (let i = 0; i < 200 && !out.includes('ready'); i++) await sleep(50);
    assert.ok(out.includes('ready'), 'the other process started');
    await raw.queue(name).sendMessage('{"cpu":true}');
    const hooked: string[] = [];
    const log = capturingLog();
    const processor: MessageProcessor = {
      process: () => {
        // A pipe write is attempted at once (libuv), so the other process is told before we block.
        child.stdin.end('go\n');
        // A CPU step that holds the event loop 3 s: no timer of ours (extension, renewal) can run.
        const until = Date.now() + 3_000;
        while (Date.now() < until);
        return Promise.resolve();
      },
    };
    const coordinator = new DrainCoordinator({
      queues: parts.queues,
      slots: leaseSlots(parts.settings, 2),
      processors: { map: processor, reduce: processor },
      continuation: () => Promise.resolve(),
      fanOut: () => Promise.resolve(),
      clock: systemClock,
      log,
      tuning: parts.settings.tuning,
      counters: { duplicates: (q, n) => hooked.push(`${q} ${n}`) },
    });
    await coordinator.wake(name, 'map');
    await exited;
    assert.ok(out.includes('got'), 'the other process received the message while we were starved');
    const a = coordinator.activity();
    assert.deepEqual(a.duplicates, { map: 1, reduce: 0 });
    assert.equal(a.processed.map, 0);
    // 3 s for one message against a quarter of 1 s: the process now takes one at a time; the
    // reduce stage, untimed, keeps one drain's worth.
    const { dequeueBatchSize, maxDequeueTasks } = parts.settings.tuning;
    assert.deepEqual(a.holding, {
      map: { held: 0, limit: 1 },
      reduce: { held: 0, limit: dequeueBatchSize * maxDequeueTasks },
    });
    assert.deepEqual(hooked, [`${name} 1`]);
    assert.deepEqual(
      log.lines.filter((l) => l.includes(name)),
      [],
    );
  });
});

describe('the slot lease', () => {
  test('a lost lease stops the drain taking new messages at once', async () => {
    const { parts, raw } = await testRuntime();
    const name = parts.names.inputQueue(0);
    for (let i = 0; i < 60; i++) await raw.queue(name).sendMessage(`m${i}`);
    const slots = leaseSlots(parts.settings, 1);
    const slot = await slots.acquire(name);
    assert.ok(slot);
    // Another drain takes the slot: break our lease and take a new one on the same blob.
    const blob = raw.container('leases').getBlockBlobClient(`${name}/slot-0`);
    await blob.getBlobLeaseClient().breakLease(0);
    await blob.getBlobLeaseClient().acquireLease(15);
    const q = parts.queues.queue(name);
    let receivesAfterLoss = 0;
    const watched: DrainQueue = Object.assign(Object.create(q) as DrainQueue, {
      receive: (n: number, v: number) => {
        if (slot.lost) receivesAfterLoss++;
        return q.receive(n, v);
      },
    });
    const processor: MessageProcessor = { process: () => sleep(150) };
    const stats = await new TaskGroup({
      queue: watched,
      processor,
      clock: systemClock,
      log: quietLog,
      // One message per receive, so a lost lease is seen at the next one.
      options: taskOptions({ batchSize: 1, slot }),
    }).run(1);
    await slot.release(); // someone else's lease now: a no-op, not an error
    assert.equal(slot.lost, true, 'the next renewal (≤ 5 s) found the lease taken');
    assert.equal(stats.leaseLost, true);
    assert.equal(receivesAfterLoss, 0, 'no receive once the loss was known');
    assert.ok(stats.processed < 60, `stopped early (${stats.processed} of 60)`);
    assert.equal((await raw.queue(name).getProperties()).approximateMessagesCount, 60 - stats.processed);
  });
});

describe('receive sizing', () => {
  test('the estimate follows the time per message, between 1 and the cap', () => {
    const s = new ReceiveSizer(32, 60);
    const sizeAfter = (count: number, elapsedMs: number): number => {
      s.observe(count, elapsedMs);
      const n = s.take();
      s.giveBack(n);
      return n;
    };
    assert.equal(s.take(), 32, 'the cap until a batch has been timed');
    s.giveBack(32);
    assert.equal(sizeAfter(8, 8 * 2_000), 7, '2 s a message: 15 s (a quarter of 60 s) fits 7');
    assert.equal(sizeAfter(8, 8 * 60_000), 1, 'never below one');
    for (let i = 0; i < 30; i++) s.observe(32, 32 * 10);
    assert.equal(sizeAfter(32, 32 * 10), 32, 'a fast path grows back to the cap');
  });

  test('the limit counts what the whole process holds: a batch timed among others sets the rate', () => {
    // 64 held in all, a batch of 8 of them took 32 s: the process settles one every 0.5 s, and
    // a quarter of 60 s (15 s) fits 30 held, however they are split between tasks.
    const s = new ReceiveSizer(8, 60, 64);
    const taken: number[] = [];
    for (let i = 0; i < 9; i++) taken.push(s.take());
    assert.deepEqual(taken, [8, 8, 8, 8, 8, 8, 8, 8, 0], 'the initial limit, 64, in receives of at most 8');
    s.observe(8, 32_000, 64);
    assert.equal(s.holdLimit, 30);
    assert.equal(s.take(), 0, 'holding 64, over the new limit: no receive');
    let freed = false;
    void s.freedSoon().then(() => (freed = true));
    s.giveBack(8 * 5); // five batches settle: 24 held
    return Promise.resolve().then(() => {
      assert.ok(freed, 'a waiting task is woken by a batch that settles');
      assert.equal(s.take(), 6, 'what is left under the limit');
      assert.equal(s.held, 30);
      s.giveBack(30);
      assert.equal(s.held, 0);
      s.observe(8, 60 * 60_000, 8);
      assert.equal(s.holdLimit, 1);
      assert.equal(s.take(), 1, 'a process holding nothing may always take one');
      assert.equal(s.take(), 0);
    });
  });

  test('tasks sharing a process hold no more than its limit: the others wait, then take the rest', async () => {
    const { parts, raw } = await testRuntime();
    const name = parts.names.inputQueue(0);
    await Promise.all(Array.from({ length: 48 }, (_, i) => raw.queue(name).sendMessage(`m${i}`)));
    const q = parts.queues.queue(name);
    let held = 0;
    let peak = 0;
    const counting: DrainQueue = Object.assign(Object.create(q) as DrainQueue, {
      receive: async (n: number, v: number) => {
        const got = await q.receive(n, v);
        peak = Math.max(peak, (held += got.length));
        return got;
      },
      delete: async (m: Parameters<DrainQueue['delete']>[0]) => {
        await q.delete(m);
        held--;
      },
    });
    // One message at a time, 50 ms each (a CPU-bound step). A quarter of 2 s is 500 ms: about
    // 10 held at that rate. Sixteen tasks receiving 4 each would hold all 48 at once.
    let chain: Promise<void> = Promise.resolve();
    let first: number | undefined;
    let last = 0;
    const processor: MessageProcessor = {
      process: () =>
        (chain = chain.then(async () => {
          first ??= Date.now();
          await sleep(50);
          last = Date.now();
        })),
    };
    const sizer = new ReceiveSizer(4, 2, 8);
    const stats = await new TaskGroup({
      queue: counting,
      processor,
      clock: systemClock,
      log: quietLog,
      options: taskOptions({ batchSize: 4, maxTasks: 16, visibilityTimeoutSeconds: 2, sizer }),
    }).run(16);
    assert.equal(stats.processed, 48);
    assert.equal(stats.duplicates, 0);
    assert.ok(stats.holdWaits > 0, 'tasks waited for room instead of receiving');
    // The first estimate is optimistic (its batch was first in line), the next ones settle it.
    assert.ok(peak <= 20, `held about the limit, not 4 for each of 16 tasks (peak ${peak} of 48)`);
    // 50 ms a message on an idle machine (a limit of 10); a loaded one stretches each sleep, and the
    // limit follows the time the messages really took, not the nominal 50 ms.
    const perMessageMs = (last - first!) / 48;
    const expected = 500 / perMessageMs;
    assert.ok(
      sizer.holdLimit <= 12 && sizer.holdLimit >= Math.min(8, Math.floor(expected * 0.7)),
      `converged on 500 ms at ${perMessageMs.toFixed(1)} ms a message: ${sizer.holdLimit}, expected about ${expected.toFixed(1)}`,
    );
    assert.equal(sizer.held, 0, 'everything given back');
  });

  test('a task whose messages are slow receives fewer at a time', async () => {
    const { parts, raw } = await testRuntime();
    const name = parts.names.inputQueue(0);
    for (let i = 0; i < 14; i++) await raw.queue(name).sendMessage(`m${i}`);
    const q = parts.queues.queue(name);
    const asked: number[] = [];
    const recording: DrainQueue = Object.assign(Object.create(q) as DrainQueue, {
      receive: (n: number, v: number) => (asked.push(n), q.receive(n, v)),
    });
    // One message at a time, 100 ms each (a CPU-bound step): a batch of 8 takes 0.8 s.
    let chain: Promise<void> = Promise.resolve();
    const processor: MessageProcessor = {
      process: () => (chain = chain.then(() => sleep(100))),
    };
    const stats = await new TaskGroup({
      queue: recording,
      processor,
      clock: systemClock,
      log: quietLog,
      // A quarter of 2 s is 0.5 s: 5 messages at 100 ms each.
      options: taskOptions({ batchSize: 8, visibilityTimeoutSeconds: 2 }),
    }).run(1);
    assert.equal(stats.processed, 14);
    assert.equal(asked[0], 8);
    assert.ok(asked[1]! <= 5 && asked[1]! >= 3, `the second receive was sized from the first (${asked.join(', ')})`);
  });
});
