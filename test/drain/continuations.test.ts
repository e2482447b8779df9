/**
 * Scheduled continuations after a scale-in (docs/DESIGN.md), against real Azurite and the real
 * broker over AMQP with the app's own Service Bus publisher: a continuation scheduled for
 * messages in flight is coalesced with the next one, and cancelled once the queue is seen empty
 * (by a later drain, or by the shutdown of a scale-in), so nothing comes due to start an
 * instance for nothing; and a queue that still holds a crashed holder's message keeps its
 * continuation through the shutdown, which comes due and gets the batch completed.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { PushdrainApp } from '../../shared/app';
import type { Report } from '../../shared/billing/report';
import { parseWorkDetected, type WorkDetected } from '../../shared/bus/work-detected';
import type { AppParts } from '../../shared/compose/app-parts';
import { Continuations } from '../../shared/drain/continuations';
import { SUBSCRIPTIONS, TOPIC } from '../../shared/names';
import { provisionStorage } from '../../tools/devstack/provision-storage';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { expectedReport } from '../../tools/testkit/oracle';
import { receiveExactly, useBroker } from '../support/broker';
import { composedApp } from '../support/composed-app';
import { completed, post, report } from '../support/invoke';
import { quietLog, rawStorage, testSettings, useStorage } from '../support/storage';

useStorage();

const bus = useBroker();

const scheduled = (): number => bus.broker.scheduledCount(TOPIC) ?? 0;

/** An app on the test's Azurite and the real broker, one partition, with its own publisher. */
async function appOnBroker(env: Record<string, string> = {}): Promise<{ app: PushdrainApp; parts: AppParts }> {
  const settings = testSettings({
    ServiceBusConnection: bus.broker.connectionString,
    PUSHDRAIN_PARTITIONS: '1',
    ...env,
  });
  const made = composedApp(settings, { log: quietLog });
  await provisionStorage(settings);
  return made;
}

function wakeOf(parts: AppParts, queue: string): WorkDetected {
  return { storageAccount: parts.settings.storage.accountName, queueName: queue, payloadSize: 0, role: 'input' };
}

/** Another instance takes the queue's one message and keeps it in flight for `seconds`. */
async function heldElsewhere(parts: AppParts, queue: string, seconds: number) {
  const client = rawStorage(parts.settings).queue(queue);
  await client.sendMessage('held by another instance');
  const [held] = (await client.receiveMessages({ numberOfMessages: 1, visibilityTimeout: seconds }))
    .receivedMessageItems;
  assert.ok(held, 'the message was received');
  return { finish: () => client.deleteMessage(held.messageId, held.popReceipt) };
}

describe('scheduled continuations on the real broker', () => {
  test('coalesced while one is pending; cancelled when a later drain sees the queue empty', async () => {
    const { app, parts } = await appOnBroker();
    try {
      const queue = parts.names.inputQueue(0);
      const other = await heldElsewhere(parts, queue, 60);
      const before = scheduled();

      // Nothing visible, one message in flight: a wake-up for when its visibility timeout ends.
      const first = await app.drain(wakeOf(parts, queue));
      assert.equal(first.kind === 'drained' && first.continuation, 'delayed');
      assert.equal(scheduled(), before + 1);
      // A second wake-up that finds the same: the pending continuation already covers it.
      const second = await app.drain(wakeOf(parts, queue));
      assert.equal(second.kind === 'drained' && second.continuation, 'delayed');
      assert.equal(scheduled(), before + 1, 'coalesced: still one scheduled');
      assert.deepEqual(app.health().continuations, { scheduled: 1, coalesced: 1, cancelled: 0, pending: 1 });

      // The other instance finishes; the next drain's closing look reads a depth of 0.
      await other.finish();
      const third = await app.drain(wakeOf(parts, queue));
      assert.equal(third.kind, 'drained');
      assert.ok(third.kind === 'drained' && third.emptyAt !== undefined, 'the closing look saw the queue empty');
      assert.equal(scheduled(), before, 'the scheduled continuation was cancelled on the broker');
      assert.deepEqual(app.health().continuations, { scheduled: 1, coalesced: 1, cancelled: 1, pending: 0 });
    } finally {
      await app.close();
    }
  });

  test('a scale-in cancels the continuation of a queue that is empty by then: nothing comes due', async () => {
    const { app, parts } = await appOnBroker();
    const queue = parts.names.inputQueue(0);
    const other = await heldElsewhere(parts, queue, 60);
    const before = scheduled();
    const receiver = bus.client().createReceiver(TOPIC, SUBSCRIPTIONS.drain.name);
    try {
      await app.drain(wakeOf(parts, queue));
      assert.equal(scheduled(), before + 1);
      await other.finish();
    } finally {
      await app.close(); // what the host's stop (SIGTERM on scale-in) runs
    }
    assert.equal(scheduled(), before, 'cancelled at shutdown');
    assert.equal((await receiver.peekMessages(10)).length, 0, 'nothing on the drain subscription');
    await receiver.close();
  });

  test('a lost wake-up is still recovered: the continuation of a queue still holding a crashed holder’s message survives the scale-in, comes due, and the batch completes', async () => {
    const VISIBILITY_S = 4;
    const env = { PUSHDRAIN_VISIBILITY_TIMEOUT_SECONDS: String(VISIBILITY_S), PUSHDRAIN_CHUNK_SIZE: '1000' };
    const first = await appOnBroker(env);
    const queue = first.parts.names.inputQueue(0);
    const drainSub = bus.client().createReceiver(TOPIC, SUBSCRIPTIONS.drain.name);
    const aggregateSub = bus.client().createReceiver(TOPIC, SUBSCRIPTIONS.aggregate.name);
    let second: { app: PushdrainApp; parts: AppParts } | undefined;
    try {
      const txns = generate(300, 2401, 10);
      const res = await post(first.app, toNdjson(txns));
      assert.equal(res.status, 202);
      const { batchId } = res.jsonBody as { batchId: string };
      // The batch's WorkDetected reached an instance that took the chunk's pointer and crashed.
      const [event] = await receiveExactly(drainSub, 1);
      assert.ok(event);
      await drainSub.completeMessage(event);
      const raw = rawStorage(first.parts.settings).queue(queue);
      const taken = await raw.receiveMessages({ numberOfMessages: 1, visibilityTimeout: VISIBILITY_S });
      assert.equal(taken.receivedMessageItems.length, 1, 'the crashed holder has the pointer in flight');

      // Another wake-up of the queue on this instance sees only a message in flight: a continuation.
      const before = scheduled();
      const drained = await first.app.drain(wakeOf(first.parts, queue));
      assert.equal(drained.kind === 'drained' && drained.continuation, 'delayed');
      assert.equal(scheduled(), before + 1);
      // Scale-in: the queue is not empty, so the continuation stays.
      await first.app.close();
      assert.equal(first.parts.continuations.snapshot().cancelled, 0);

      // It comes due on the drain subscription; a fresh instance drains what the crash left.
      second = await appOnBroker({ ...env, PUSHDRAIN_NAME_PREFIX: first.parts.settings.namePrefix });
      const [due] = await receiveExactly(drainSub, 1, 20_000);
      assert.ok(due, 'the continuation came due');
      await drainSub.completeMessage(due);
      const wake = parseWorkDetected(due.body);
      assert.ok(typeof wake !== 'string' && wake.queueName === queue);
      const mapped = await second.app.drain(wake);
      assert.equal(mapped.kind, 'drained');
      // The batch's only chunk: the map step folded it into the manifest itself (no results round trip).
      assert.ok(await completed(second.app, batchId), 'the batch completed');
      assert.equal((await aggregateSub.peekMessages(10)).length, 0, 'nothing for the aggregate subscription');
      const got = await report(second.app, batchId);
      assert.equal(got.status, 200);
      const expected = expectedReport(txns);
      const body = got.jsonBody as Report;
      assert.deepEqual(body.rows, expected.rows);
      assert.deepEqual(body.totals, expected.totals);
    } finally {
      await Promise.all([drainSub.close(), aggregateSub.close()]);
      await second?.app.close();
    }
  });
});

describe('Continuations (the rules, without a broker)', () => {
  function fake() {
    let now = 1_000;
    const cancelled: string[] = [];
    const published: { queue: string; delayMs: number }[] = [];
    let depth = 0;
    const c = new Continuations({
      publish: (queue, delayMs) => {
        published.push({ queue, delayMs });
        const id = `${queue}@${now + delayMs}`;
        return Promise.resolve(
          delayMs > 0
            ? {
                count: 1,
                cancel: () => {
                  cancelled.push(id);
                  return Promise.resolve();
                },
              }
            : undefined,
        );
      },
      depth: () => Promise.resolve(depth),
      clock: { now: () => now },
      log: quietLog,
    });
    return {
      c,
      cancelled,
      published,
      tick: (ms: number) => (now += ms),
      setDepth: (d: number) => (depth = d),
      now: () => now,
    };
  }

  test('a later continuation is covered by a pending earlier one; an earlier one is scheduled as well', async () => {
    const f = fake();
    await f.c.schedule('q', 60_000);
    await f.c.schedule('q', 90_000); // due later: covered
    await f.c.schedule('q', 16_000); // due sooner: scheduled
    await f.c.schedule('other', 60_000);
    assert.deepEqual(
      f.published.map((p) => p.delayMs),
      [60_000, 16_000, 60_000],
    );
    assert.deepEqual(f.c.snapshot(), { scheduled: 3, coalesced: 1, cancelled: 0, pending: 3 });
  });

  test('only continuations scheduled before the empty look are cancelled; due ones are forgotten', async () => {
    const f = fake();
    await f.c.schedule('q', 60_000);
    const lookedAt = f.now();
    f.tick(1);
    await f.c.schedule('q', 30_000); // after the look: it may cover work the look did not see
    await f.c.seenEmpty('q', lookedAt);
    assert.deepEqual(f.cancelled, []);
    await f.c.seenEmpty('q', f.now() + 1);
    assert.equal(f.cancelled.length, 2);
    await f.c.schedule('q', 1_000);
    f.tick(2_000); // came due: fired, nothing to cancel
    await f.c.seenEmpty('q', f.now());
    assert.equal(f.cancelled.length, 2);
    assert.equal(f.c.snapshot().pending, 0);
  });

  test('cancelIdle keeps the continuation of a queue that still holds messages, cancels an empty one', async () => {
    const f = fake();
    await f.c.schedule('q', 60_000);
    f.setDepth(1);
    await f.c.cancelIdle();
    assert.deepEqual(f.cancelled, []);
    f.setDepth(0);
    await f.c.cancelIdle();
    assert.equal(f.cancelled.length, 1);
    await f.c.schedule('q', 0); // now: published, never tracked
    assert.equal(f.c.snapshot().pending, 0);
  });
});
