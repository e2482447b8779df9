/**
 * The task group's logic with an in-memory queue and a fake clock: exact back-off delays, task
 * exit, scale-up, time budget, poison, delete-after-success. No test here sleeps.
 * (The same drainer runs against real Azurite in test/pipeline/pipeline.test.ts.)
 */
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { describe, test } from 'node:test';

import { perMessagesRule } from '../../../shared/drain/task-count';
import { TaskGroup, type TaskOptions } from '../../../shared/drain/task-group';
import { PermanentError } from '../../../shared/errors';
import type { Clock, DrainQueue, MessageProcessor, QueueMessage } from '../../../shared/ports';
import { quietLog } from '../../support/storage';

class FakeClock implements Clock {
  t = 1_000_000;
  readonly slept: number[] = [];
  constructor(private readonly randoms: number[] = [0.5]) {}
  now(): number {
    return this.t;
  }
  sleep(ms: number): Promise<void> {
    this.slept.push(ms);
    this.t += ms;
    return Promise.resolve();
  }
  random(): number {
    const r = this.randoms.shift() ?? 0.5;
    this.randoms.push(r);
    return r;
  }
}

class MemoryQueue implements DrainQueue {
  readonly name = 'mem';
  visible: QueueMessage[] = [];
  deleted: string[] = [];
  poisoned: { id: string; reason: string }[] = [];
  receives = 0;
  onReceive?: (n: number) => void;
  private added = 0;
  add(n: number, dequeueCount = 1): void {
    for (let i = 0; i < n; i++)
      this.visible.push({ id: `m${this.added++}`, popReceipt: 'p', dequeueCount, text: '{}' });
  }
  receive(max: number): Promise<QueueMessage[]> {
    this.receives++;
    this.onReceive?.(this.receives);
    return Promise.resolve(this.visible.splice(0, max));
  }
  delete(m: QueueMessage): Promise<void> {
    this.deleted.push(m.id);
    return Promise.resolve();
  }
  depthReads = 0;
  depth(): Promise<number> {
    this.depthReads++;
    return Promise.resolve(this.visible.length);
  }
  hasVisible(): Promise<boolean> {
    return Promise.resolve(this.visible.length > 0);
  }
  poison(m: QueueMessage, reason: string): Promise<void> {
    this.poisoned.push({ id: m.id, reason });
    return Promise.resolve();
  }
}

/** A transient receive failure with no minimum wait of its own: the back-off alone decides. */
function reset(): Error {
  return Object.assign(new Error('reset'), { code: 'ECONNRESET' });
}

const OPTS: TaskOptions = {
  batchSize: 32,
  visibilityTimeoutSeconds: 30,
  minIdleMs: 100,
  maxIdleMs: 5000,
  maxTasks: 4,
  maxDequeueCount: 5,
  deadline: Number.MAX_SAFE_INTEGER,
};
const ok: MessageProcessor = { process: () => Promise.resolve() };

describe('task-count rule', () => {
  test('one task per N messages, at least one, at most the cap', () => {
    const rule = perMessagesRule(64, 8);
    assert.deepEqual([0, 1, 64, 65, 500, 10_000].map(rule), [1, 1, 1, 2, 8, 8]);
  });
});

describe('task group', () => {
  test('a finished task group leaves no listener on the shared shutdown signal', async () => {
    const shutdown = new AbortController();
    for (let i = 0; i < 20; i++) {
      const q = new MemoryQueue();
      q.add(3);
      await new TaskGroup({
        queue: q,
        processor: ok,
        clock: new FakeClock(),
        log: quietLog,
        options: { ...OPTS, signal: shutdown.signal },
      }).run(2);
    }
    // Before the fix each group left one, so a long-running host grew without bound.
    assert.equal(getEventListeners(shutdown.signal, 'abort').length, 0);
  });

  test('an unreachable queue: one task backs off by the formula exactly, then gives up at max idle', async () => {
    const clock = new FakeClock([0.25, 0.75]);
    const q = new MemoryQueue();
    q.onReceive = () => {
      throw reset();
    };
    const stats = await new TaskGroup({ queue: q, processor: ok, clock, log: quietLog, options: OPTS }).run(1);
    // random alternates 0.25 → U=90 and 0.75 → U=110, starting with 0.25 at idle 0.
    const expected: number[] = [];
    const u = [90, 110];
    for (let idle = 0, k = 0; ; idle++, k++) {
      const d = Math.min(5000, Math.round(100 + (2 ** idle - 1) * u[k % 2]!));
      if (d >= 5000) break;
      expected.push(d);
    }
    assert.deepEqual(clock.slept, expected);
    assert.deepEqual(expected, [100, 210, 370, 870, 1450, 3510]);
    assert.equal(stats.emptyReceives, expected.length + 1);
    assert.equal(stats.tasksStarted, 1);
  });

  test('work resets the back-off; every processed message is deleted', async () => {
    const clock = new FakeClock();
    const q = new MemoryQueue();
    q.onReceive = (n) => {
      if (n === 1 || n === 3) throw reset();
      if (n === 2) q.add(32 + 2); // a full batch: the task goes on
    };
    const stats = await new TaskGroup({
      queue: q,
      processor: ok,
      clock,
      log: quietLog,
      options: { ...OPTS, maxTasks: 1 },
    }).run(1);
    assert.equal(stats.processed, 34);
    assert.equal(q.deleted.length, 34);
    assert.equal(clock.slept[0], 100);
    assert.equal(clock.slept[1], 100, 'after work the next failed receive starts again at min');
  });

  test('a full batch scales up, bounded by maxTasks', async () => {
    const clock = new FakeClock();
    const q = new MemoryQueue();
    q.add(32 * 20);
    const stats = await new TaskGroup({ queue: q, processor: ok, clock, log: quietLog, options: OPTS }).run(1);
    assert.equal(stats.processed, 640);
    assert.ok(stats.tasksStarted > 1, 'scaled up');
    assert.ok(stats.peakTasks <= OPTS.maxTasks, `peak ${stats.peakTasks} within the cap`);
  });

  test('a failing processor deletes nothing; the message is left for redelivery', async () => {
    const q = new MemoryQueue();
    q.add(3);
    const failing: MessageProcessor = { process: () => Promise.reject(new Error('boom')) };
    const stats = await new TaskGroup({
      queue: q,
      processor: failing,
      clock: new FakeClock(),
      log: quietLog,
      options: OPTS,
    }).run(1);
    assert.equal(stats.failed, 3);
    assert.deepEqual(q.deleted, []);
    assert.deepEqual(q.poisoned, []);
  });

  test('a permanent error or too many dequeues goes to poison at once', async () => {
    const q = new MemoryQueue();
    q.add(2, 1);
    q.add(1, 6);
    const poisonedIds: string[] = [];
    const p: MessageProcessor = {
      process: () => Promise.reject(new PermanentError('corrupt')),
      onPoison: (m) => {
        poisonedIds.push(m.id);
        return Promise.resolve();
      },
    };
    const stats = await new TaskGroup({
      queue: q,
      processor: p,
      clock: new FakeClock(),
      log: quietLog,
      options: OPTS,
    }).run(1);
    assert.equal(stats.poisoned, 3);
    assert.deepEqual(q.poisoned.map((x) => x.reason).sort(), ['corrupt', 'corrupt', 'dequeued 6 times (max 5)']);
    assert.equal(poisonedIds.length, 3);
  });

  test('a failed after-batch hook leaves the batch undeleted', async () => {
    const q = new MemoryQueue();
    q.add(4);
    const p: MessageProcessor = {
      process: () => Promise.resolve(),
      afterBatch: () => Promise.reject(new Error('publish down')),
    };
    const stats = await new TaskGroup({
      queue: q,
      processor: p,
      clock: new FakeClock(),
      log: quietLog,
      options: OPTS,
    }).run(1);
    assert.deepEqual(q.deleted, []);
    assert.equal(stats.processed, 0);
  });

  test('the time budget stops tasks from taking new work', async () => {
    const clock = new FakeClock();
    const q = new MemoryQueue();
    q.add(32 * 10);
    const slow: MessageProcessor = { process: () => clock.sleep(10) }; // each batch advances time
    const tasks = new TaskGroup({
      queue: q,
      processor: slow,
      clock,
      log: quietLog,
      options: { ...OPTS, maxTasks: 1, deadline: clock.t + 35 },
    });
    const stats = await tasks.run(1);
    assert.ok(stats.stoppedByBudget);
    assert.equal(tasks.nudge(), false, 'a group that stopped for its budget takes no joins');
    assert.ok(q.visible.length > 0, 'work left for the continuation');
    assert.ok(stats.receives < 10);
  });

  test('a wake-up joins running tasks: it resets their back-off, and is refused once no task is live', async () => {
    const clock = new FakeClock();
    const q = new MemoryQueue();
    const tasks = new TaskGroup({ queue: q, processor: ok, clock, log: quietLog, options: OPTS });
    assert.equal(tasks.nudge(), false, 'nothing to join before the tasks run');
    let joined: boolean | undefined;
    q.onReceive = (n) => {
      if (n === 1 || n === 2 || n === 4) throw reset();
      // Third receive (idle 2): an event for this queue arrives while the receive is in flight.
      if (n === 3) {
        q.add(1);
        joined = tasks.nudge();
      }
    };
    const stats = await tasks.run(1);
    assert.equal(joined, true, 'a live task covered the event');
    assert.equal(stats.processed, 1);
    assert.deepEqual(clock.slept.slice(0, 3), [100, 200, 100], 'back-off restarted at min after the join');
    assert.equal(tasks.nudge(), false, 'after the last task exits, a wake-up must drain itself');
  });

  test('a join during an empty receive is not lost: the task receives again instead of exiting', async () => {
    const clock = new FakeClock();
    const q = new MemoryQueue();
    const tasks = new TaskGroup({ queue: q, processor: ok, clock, log: quietLog, options: OPTS });
    // The receive that would end the task (it comes back empty) sees a join while in flight.
    q.onReceive = (n) => {
      if (n === 1) tasks.nudge();
      if (n === 2) q.add(1);
    };
    const stats = await tasks.run(1);
    assert.equal(stats.processed, 1, 'the work behind the join was taken');
  });

  test('receive failures back off on that queue, honouring the minimum wait of ServerBusy', async () => {
    const clock = new FakeClock();
    const q = new MemoryQueue();
    let calls = 0;
    q.receive = () => {
      calls++;
      if (calls <= 2)
        return Promise.reject(Object.assign(new Error('throttled'), { statusCode: 503, code: 'ServerBusy' }));
      return calls === 3 ? Promise.reject(reset()) : Promise.resolve([]);
    };
    const stats = await new TaskGroup({
      queue: q,
      processor: ok,
      clock,
      log: quietLog,
      options: { ...OPTS, maxIdleMs: 60_000 },
    }).run(1);
    assert.equal(stats.receiveErrors, 3);
    assert.deepEqual(clock.slept.slice(0, 2), [10_000, 10_000], 'ServerBusy waits at least 10 s');
    assert.equal(clock.slept[2], 400, 'then the ordinary back-off continues where it stood');
  });
});

describe('task group, sized from the depth', () => {
  const PUSH: TaskOptions = { ...OPTS, taskCount: perMessagesRule(64, 4) };

  test('a short batch ends the task at once: no empty receive, no back-off', async () => {
    const clock = new FakeClock();
    const q = new MemoryQueue();
    q.add(5);
    const stats = await new TaskGroup({ queue: q, processor: ok, clock, log: quietLog, options: PUSH }).run(1);
    assert.equal(stats.processed, 5);
    assert.equal(stats.receives, 1);
    assert.equal(stats.emptyReceives, 0);
    assert.deepEqual(clock.slept, []);
    assert.equal(q.depthReads, 0, 'a small drain never reads the depth');
  });

  test('an empty receive ends the task at once', async () => {
    const clock = new FakeClock();
    const stats = await new TaskGroup({
      queue: new MemoryQueue(),
      processor: ok,
      clock,
      log: quietLog,
      options: PUSH,
    }).run(1);
    assert.deepEqual([stats.receives, stats.emptyReceives, clock.slept.length], [1, 1, 0]);
  });

  test('a wake-up that joins while a short batch is processed makes the task receive again', async () => {
    const q = new MemoryQueue();
    q.add(1);
    let joined: boolean | undefined;
    let calls = 0;
    const joining: MessageProcessor = {
      process: () => {
        if (++calls === 1) {
          q.add(1); // enqueued, then its event arrives and joins
          joined = tasks.nudge();
        }
        return Promise.resolve();
      },
    };
    const tasks: TaskGroup = new TaskGroup({
      queue: q,
      processor: joining,
      clock: new FakeClock(),
      log: quietLog,
      options: PUSH,
    });
    const stats = await tasks.run(1);
    assert.equal(joined, true);
    assert.equal(stats.processed, 2, 'the joined work was taken');
    assert.equal(stats.receives, 2);
    assert.equal(tasks.nudge(), false, 'and then the task stopped');
  });

  test('a failed receive still backs off by the formula before trying again', async () => {
    const clock = new FakeClock();
    const q = new MemoryQueue();
    let calls = 0;
    q.receive = () => (++calls <= 2 ? Promise.reject(reset()) : Promise.resolve([]));
    const stats = await new TaskGroup({ queue: q, processor: ok, clock, log: quietLog, options: PUSH }).run(1);
    assert.equal(stats.receiveErrors, 2);
    assert.deepEqual(clock.slept, [100, 200], 'min, then min + (2^1 − 1) × 100');
  });

  test('the first full receive reads the depth once and sizes the group from it', async () => {
    const q = new MemoryQueue();
    q.add(32 * 12);
    const stats = await new TaskGroup({
      queue: q,
      processor: ok,
      clock: new FakeClock(),
      log: quietLog,
      options: PUSH,
    }).run(1);
    assert.equal(stats.processed, 32 * 12);
    assert.equal(q.depthReads, 1);
    assert.equal(stats.peakTasks, 4, '352 queued after the first receive: ceil(352 / 64) = 6, capped at 4');
  });
});
