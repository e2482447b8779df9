/**
 * Scale-out through fan-out (docs/DESIGN.md, "Scale-out"), against real Azurite queues and
 * blob-lease slots: the rule, the leader's fan-out events, a fan-out event held by the
 * instance that already drains its queue, one that drains on a second instance with its own
 * slot, one that finds nothing and is dropped, and the exact report at the end.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { Report } from '../../shared/billing/report';
import { parseWorkDetected, type WorkDetected } from '../../shared/bus/work-detected';
import { defaultTuning } from '../../shared/config/settings';
import { createApp } from '../../shared/create-app';
import { FanOut, fanOutRule } from '../../shared/drain/fan-out';
import { systemClock } from '../../shared/ports';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { expectedReport } from '../../tools/testkit/oracle';
import { CapturingPublisher } from '../support/capturing-publisher';
import { completed, post, pump, report } from '../support/invoke';
import { until } from '../support/poll';
import { leaseSlots, quietLog, testRuntime, useStorage } from '../support/storage';

useStorage();

/** One partition, 10-transaction chunks, a drain wanted per 2 queued messages, 4 slots. */
const FAN_OUT = {
  PUSHDRAIN_PARTITIONS: '1',
  PUSHDRAIN_CHUNK_SIZE: '10',
  PUSHDRAIN_MESSAGES_PER_DRAIN: '2',
  PUSHDRAIN_DRAIN_SLOTS: '4',
  PUSHDRAIN_MESSAGES_PER_TASK: '4',
};

const waitFor = <T>(what: string, probe: () => T | undefined): Promise<T> =>
  until(what, 10_000, probe, { everyMs: 10 });

describe('the fan-out rule', () => {
  test('drains wanted = clamp(ceil(depth / messagesPerDrain), 1, drainSlots)', () => {
    const t = { ...defaultTuning(), messagesPerDrain: 512, drainSlots: 16 };
    const wanted = fanOutRule(t);
    assert.deepEqual([0, 1, 512, 513, 1024, 8192, 8193, 1_000_000].map(wanted), [1, 1, 1, 2, 2, 16, 16, 16]);
    assert.equal(defaultTuning().messagesPerDrain, 512);
    assert.equal(defaultTuning().drainSlots, 16);
  });

  test('a fan-out event survives the trip through JSON; a plain event has no flag', () => {
    const event: WorkDetected = {
      storageAccount: 'a',
      queueName: 'work-0',
      payloadSize: 0,
      role: 'input',
      fanOut: true,
    };
    assert.deepEqual(parseWorkDetected(JSON.stringify(event)), event);
    assert.equal((parseWorkDetected(JSON.stringify({ ...event, fanOut: 'yes' })) as WorkDetected).fanOut, undefined);
  });
});

describe('fan-out across instances', () => {
  test('the slot-0 drain asks for more drains; a second instance drains with its own slot; the same instance holds its share', async () => {
    // One message per receive and one task per drain, so the leader is still busy when the others arrive.
    const { app, parts, events, observer } = await testRuntime({
      ...FAN_OUT,
      PUSHDRAIN_MAX_DEQUEUE_TASKS: '1',
      PUSHDRAIN_DEQUEUE_BATCH_SIZE: '1',
    });
    const second = createApp(parts.settings, { publisher: new CapturingPublisher(), log: quietLog });
    try {
      const txns = generate(200, 31, 30);
      const res = await post(app, toNdjson(txns));
      assert.equal(res.status, 202);
      const { batchId } = res.jsonBody as { batchId: string };
      const [wake] = events.take().filter((c) => c.event.role === 'input');
      assert.ok(wake && !wake.event.fanOut);
      const queue = parts.names.inputQueue(0);
      assert.equal(await parts.queues.depth(queue), 20);

      // The leader (slot 0) sees 20 queued: min(4, ceil(20 / 2)) = 4 drains, so 3 fan-out events.
      const leader = app.drain(wake.event);
      const fanOuts = await waitFor('fan-out events', () => {
        const got = events.all.filter((c) => c.event.fanOut);
        return got.length > 0 ? got : undefined;
      });
      assert.equal(fanOuts.length, 3);
      for (const f of fanOuts)
        assert.deepEqual(
          { queue: f.event.queueName, role: f.event.role, delay: f.delayMs },
          { queue, role: 'input', delay: 0 },
        );

      // One reaches a second instance: it takes slot 1 and drains there, and asks for nothing more.
      const other = second.drain(fanOuts[1]!.event);
      // One reaches the same instance: it joins and stays held until the leader's drain ends.
      let heldDone = false;
      const held = app.drain(fanOuts[0]!.event).then((r) => ((heldDone = true), r));
      await waitFor('the held count', () => (app.health().drains.held === 1 ? true : undefined));
      assert.equal((await other).kind, 'drained');
      assert.equal(second.health().drains.fanOutPublished, 0, 'only the slot-0 holder fans out');
      const lead = await leader;
      assert.equal(lead.kind, 'drained');
      assert.deepEqual(await held, { kind: 'held' });
      assert.ok(heldDone);
      assert.equal(app.health().drains.held, 0);

      // Every input message processed once between the two instances.
      const a = app.health().drains.processed.map;
      const b = second.health().drains.processed.map;
      assert.equal(a + b, 20, `instance shares ${a} + ${b}`);
      assert.ok(b > 0, 'the second instance took a share');
      assert.equal(app.health().drains.fanOutPublished, 3);

      // The third arrives when nothing is left: one peek, no slot, no drain.
      const before = app.storageTransactions();
      assert.deepEqual(await app.drain(fanOuts[2]!.event), { kind: 'fan-out-idle' });
      const after = app.storageTransactions();
      const spent = Object.entries(after).filter(([k, v]) => v !== (before[k] ?? 0));
      assert.deepEqual(
        spent.map(([k, v]) => [k, v - (before[k] ?? 0)]),
        [
          ['queue.peek', 1],
          ['total', 1],
        ],
      );

      // The results events of both instances' map steps: the first instance's reach the shared results queue.
      await pump(app, events, () => completed(observer, batchId));
      const got = (await report(observer, batchId)).jsonBody as Report;
      const expected = expectedReport(txns);
      assert.deepEqual(got.rows, expected.rows);
      assert.deepEqual(got.totals, expected.totals);
    } finally {
      await second.close();
    }
  });

  test('a fan-out event that finds every slot held returns without a continuation; a plain one leaves one look-again per process', async () => {
    // Batches of one: a plain wake-up's probe comes back full, so it goes on to want a slot.
    const { app, parts, events, raw } = await testRuntime({
      ...FAN_OUT,
      PUSHDRAIN_DRAIN_SLOTS: '1',
      PUSHDRAIN_DEQUEUE_BATCH_SIZE: '1',
    });
    const queue = parts.names.inputQueue(0);
    for (let i = 0; i < 4; i++) await raw.queue(queue).sendMessage('{}');
    const held = await leaseSlots(parts.settings, 1).acquire(queue);
    assert.ok(held);
    try {
      const event = {
        storageAccount: parts.settings.storage.accountName,
        queueName: queue,
        payloadSize: 0,
        role: 'input' as const,
      };
      assert.equal((await app.drain({ ...event, fanOut: true })).kind, 'slots-busy');
      assert.deepEqual(events.take(), [], 'no continuation: the slot holders cover the queue');
      assert.equal((await app.drain(event)).kind, 'slots-busy');
      assert.deepEqual(
        events.take().map((c) => c.delayMs),
        [31_000],
        'a plain wake-up still looks again after a crashed holder (one slot lease, 30 s, and 1 s)',
      );
      assert.equal((await app.drain(event)).kind, 'slots-busy');
      assert.deepEqual(events.take(), [], 'one pending look-again per queue and process is enough');
    } finally {
      await held.release();
    }
  });

  test('work that joins the leader later tops the fan-out up to what the new depth wants, at most every 5 s, never past the slots', async () => {
    // The top-up arithmetic of the leader's fan-out, with the depth and the clock in the test's hands.
    let now = 1_000_000;
    let depth = 1;
    const published: number[] = [];
    const fanOut = new FanOut({
      publish: (_q, n) => (published.push(n), Promise.resolve()),
      depth: () => Promise.resolve(depth),
      clock: { ...systemClock, now: () => now },
      log: quietLog,
      tuning: { ...defaultTuning(), messagesPerDrain: 2, drainSlots: 4 },
    });
    const leader = fanOut.forDrain('work-0', 'map');
    await leader.acquired({ id: 'work-0/slot-0', index: 0, release: () => Promise.resolve() }, 0);
    assert.deepEqual(published, [], 'one message: no fan-out');
    depth = 6;
    await leader.joined();
    assert.deepEqual(published, [2], 'ceil(6 / 2) − 1 more');
    depth = 26;
    await leader.joined();
    assert.deepEqual(published, [2], 'no second depth read within 5 s');
    now += 5_000;
    await leader.joined();
    assert.deepEqual(published, [2, 1], 'capped at drainSlots − 1 = 3 for this invocation');
    now += 5_000;
    await leader.joined();
    assert.deepEqual(published, [2, 1], 'and never past it');
    const follower = fanOut.forDrain('work-0', 'map');
    await follower.acquired({ id: 'work-0/slot-2', index: 2, release: () => Promise.resolve() }, 0);
    await follower.joined();
    assert.deepEqual(published, [2, 1], 'only the holder of slot 0 asks');
  });

  test("events that arrive while this instance's drain of the queue is still starting: fan-out held, plain joined, never a second drain", async () => {
    const { app, parts, raw } = await testRuntime(FAN_OUT);
    const queue = parts.names.inputQueue(0);
    await raw.queue(queue).sendMessage('not-a-pointer');
    const event = {
      storageAccount: parts.settings.storage.accountName,
      queueName: queue,
      payloadSize: 0,
      role: 'input' as const,
    };
    const first = app.drain(event); // synchronously registers the drain; its slot and tasks come later
    const fanOuts = [app.drain({ ...event, fanOut: true }), app.drain({ ...event, fanOut: true })];
    assert.deepEqual(await app.drain(event), { kind: 'joined' });
    assert.equal(app.health().drains.inProgress, 1, 'one drain of the queue in this instance');
    assert.equal(app.health().drains.held, 2);
    assert.equal((await first).kind, 'drained');
    assert.deepEqual(await Promise.all(fanOuts), [{ kind: 'held' }, { kind: 'held' }]);
  });

  test('a shallow queue asks for no fan-out (W = 1 keeps the warm path unchanged)', async () => {
    const { app, events } = await testRuntime({ PUSHDRAIN_PARTITIONS: '1', PUSHDRAIN_CHUNK_SIZE: '10' });
    const res = await post(app, toNdjson(generate(50, 32, 10)));
    assert.equal(res.status, 202);
    const [wake] = events.take().filter((c) => c.event.role === 'input');
    const outcome = await app.drain(wake!.event);
    assert.equal(outcome.kind, 'drained');
    assert.equal(events.all.filter((c) => c.event.fanOut).length, 0);
    assert.equal(app.health().drains.fanOutPublished, 0);
  });
});
