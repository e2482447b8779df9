/**
 * Send availability over the wire: the app's own publisher (composed with both connections)
 * against two development brokers through the official SDK, with the brokers' fault switches
 * standing in for a namespace outage, a missing claim, a missing or disabled entity.
 * Timings are reported as diagnostics, never asserted.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';

import { health } from '../../functions/health-http';
import type { PushdrainApp } from '../../shared/app';
import type { AppParts } from '../../shared/compose/app-parts';
import { PermanentError, TransientError } from '../../shared/errors';
import { TOPIC, WATCHDOG_QUEUE } from '../../shared/names';
import { BACKLOG_PROPERTY } from '../../shared/notify/backlog-message';
import { type Clock, type Logger, systemClock } from '../../shared/ports';
import { provisionStorage } from '../../tools/devstack/provision-storage';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { seededClock } from '../support/clock';
import { type ComposedApp, composedApp } from '../support/composed-app';
import { type PairedBrokers, startPairedBrokers } from '../support/paired-brokers';
import { waitFor } from '../support/poll';
import { quietLog, testSettings, useStorage } from '../support/storage';

useStorage();
let pair: PairedBrokers;
const apps: PushdrainApp[] = [];

before(async () => {
  pair = await startPairedBrokers();
});
after(async () => {
  await pair?.close();
});
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
  pair.primary.broker.faults.reset();
  pair.secondary.broker.faults.reset();
  await Promise.all([pair.primary.closeClients(), pair.secondary.closeClients()]);
});

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface AppChoice {
  /** @defaultValue 200 */
  pingIntervalMs?: number;
  log?: Logger;
  /** @defaultValue the system's time with seeded randomness, so the backlog order repeats run to run */
  clock?: Clock;
}

async function startApp(
  failoverIntervalMs: number,
  { pingIntervalMs = 200, log = quietLog, clock = seededClock(1) }: AppChoice = {},
): Promise<ComposedApp> {
  const composed = composedApp(testSettings(pair.env({ failoverIntervalMs, pingIntervalMs })), { log, clock });
  apps.push(composed.app);
  await provisionStorage(composed.parts.settings);
  return composed;
}

/** Wakes input queue 0 (one WorkDetected on the topic). */
const wake = (parts: AppParts): Promise<void> =>
  parts.notifier.wake([{ queue: parts.names.inputQueue(0), payloadSize: 1 }]);
const state = (app: PushdrainApp, entity: string): string | undefined =>
  app.health().serviceBus?.entities[entity]?.state;
const secondaryIn = (): number => pair.secondary.broker.stats().messagesIn;
/** Lets the SDK see the reset connections before the next send (else a send in flight waits out its 10 s try timeout). */
async function outage(): Promise<void> {
  pair.primary.broker.faults.outage(true);
  await pause(150);
}

describe('send availability over two development brokers', () => {
  test('healthy: every send goes to the primary; nothing reaches the secondary', async () => {
    const { app, parts } = await startApp(0);
    const before = pair.primary.broker.stats();
    await parts.notifier.wake(parts.names.inputQueues().map((queue) => ({ queue })));
    await parts.notifier.scheduleCheck({ v: 1, batchId: 'healthy-1', attempt: 1, settledBefore: 0 });
    const after = pair.primary.broker.stats();
    assert.equal(after.messagesIn - before.messagesIn, 4);
    assert.equal((after['management:schedule-message'] ?? 0) - (before['management:schedule-message'] ?? 0), 1);
    assert.equal(secondaryIn(), 0);
    assert.equal(pair.secondary.broker.stats().connections, 0, 'the secondary is not even connected to');
    assert.equal(app.health().status, 'ok');
  });

  test('unauthorized, entity not found, entity disabled: no failover even at interval 0, health red, ingest still answers 202', async () => {
    const { app, parts } = await startApp(0);
    for (const kind of ['unauthorized', 'not-found', 'disabled'] as const) {
      pair.primary.broker.faults.refuseAttach(TOPIC, kind);
      await assert.rejects(wake(parts), PermanentError, kind);
      assert.equal(state(app, TOPIC), 'healthy', kind);
      assert.equal(app.health().status, 'red', kind);
      assert.match(
        app.health().serviceBus?.entities[TOPIC]?.lastError ?? '',
        /Unauthorized|MessagingEntityNotFound|MessagingEntityDisabled/,
      );
      // The anonymous route shows the state, not the SDK's text (it can name hosts).
      const body = health(app).jsonBody as {
        status: string;
        serviceBus: { entities: Record<string, Record<string, unknown>> };
      };
      assert.equal(body.status, 'red');
      assert.deepEqual(Object.keys(body.serviceBus.entities[TOPIC] ?? {}).sort(), ['red', 'state']);
      pair.primary.broker.faults.refuseAttach(TOPIC, undefined);
    }
    pair.primary.broker.faults.refuseAttach(TOPIC, 'unauthorized');
    const submitted = await app.submit({ body: toNdjson(generate(20, 7, 3)), format: 'ndjson', gzip: false });
    assert.equal(submitted.notified, false, 'the batch is accepted; its notification waits for the sweep');
    pair.primary.broker.faults.refuseAttach(TOPIC, undefined);
    await wake(parts);
    assert.equal(app.health().status, 'ok', 'a success clears red');
    assert.equal(secondaryIn(), 0, 'nothing went to the secondary');
  });

  test('an outage shorter than the interval: errors reach the caller, nothing goes to the backlog', async () => {
    const { app, parts } = await startApp(5000);
    await outage();
    await assert.rejects(wake(parts), TransientError);
    assert.equal(state(app, TOPIC), 'suspect');
    pair.primary.broker.faults.outage(false);
    await wake(parts);
    assert.equal(state(app, TOPIC), 'healthy');
    assert.equal(secondaryIn(), 0);
  });

  test('an outage longer than the interval: events land in the backlog with their routing properties; the ping sends nothing; recovery returns sends to the primary', async (t) => {
    const intervalMs = 500;
    const { app, parts } = await startApp(intervalMs, { pingIntervalMs: 300 });
    const names = parts.names;
    const earlier = new Set([...(await pair.backlog()).values()].flat().map((m) => m.messageId));
    const scaleBefore = (await pair.peekAll(pair.primary, TOPIC, 'scale')).length;
    await outage();
    const started = Date.now();
    await assert.rejects(wake(parts), TransientError);
    await assert.rejects(
      parts.notifier.scheduleCheck({ v: 1, batchId: 'long-1', attempt: 1, settledBefore: 0 }),
      TransientError,
    );
    let failedOverAt = 0;
    for (let i = 0; i < 100 && !failedOverAt; i++) {
      await pause(50);
      try {
        await parts.notifier.wake([{ queue: names.resultsQueue }, { queue: names.inputQueue(1) }], 'long-1');
        failedOverAt = Date.now();
      } catch {
        // still within the interval
      }
    }
    assert.ok(failedOverAt > 0, 'the publisher failed over');
    await parts.notifier.continuation(names.inputQueue(2), 1500);
    const check = { v: 1 as const, batchId: 'long-1', attempt: 1, settledBefore: 0 };
    await parts.notifier.scheduleCheck(check);
    const checkAt = Date.now() + parts.settings.tuning.watchdogSlaSeconds * 1000;
    assert.equal(state(app, TOPIC), 'failedOver');
    assert.equal(state(app, WATCHDOG_QUEUE), 'failedOver');
    assert.equal(app.health().status, 'degraded');

    const backlog = [...(await pair.backlog()).values()].flat().filter((m) => !earlier.has(m.messageId));
    assert.equal(backlog.length, 4);
    const events = backlog.filter((m) => m.applicationProperties?.[BACKLOG_PROPERTY.destination] === TOPIC);
    for (const m of events) {
      const body = m.body as { role: string; queueName: string };
      assert.equal(m.applicationProperties?.role, body.role, 'the filter property travels with the event');
      assert.equal(m.applicationProperties?.queueName, body.queueName);
      assert.equal(m.applicationProperties?.[BACKLOG_PROPERTY.timeToLive], 3_600_000);
    }
    assert.deepEqual(events.map((m) => m.applicationProperties?.role).sort(), ['input', 'input', 'output']);
    const continuation = events.find((m) => (m.body as { queueName: string }).queueName === names.inputQueue(2));
    assert.ok(
      continuation?.applicationProperties?.[BACKLOG_PROPERTY.scheduledEnqueueTime],
      'a delayed continuation keeps its time',
    );
    const watchdog = backlog.find((m) => m.applicationProperties?.[BACKLOG_PROPERTY.destination] === WATCHDOG_QUEUE);
    assert.equal(watchdog?.messageId, 'long-1:1');
    const at = Date.parse(String(watchdog?.applicationProperties?.[BACKLOG_PROPERTY.scheduledEnqueueTime]));
    assert.ok(Math.abs(at - checkAt) < 1000, 'the check carries its scheduled enqueue time');

    // Recovery: only the ping can notice (no send reaches the primary while failed over).
    const primaryBefore = pair.primary.broker.stats();
    pair.primary.broker.faults.outage(false);
    const recovered = Date.now();
    assert.ok(
      await waitFor(() => state(app, TOPIC) === 'healthy' && state(app, WATCHDOG_QUEUE) === 'healthy', 10_000),
      'both entities return',
    );
    const returnedMs = Date.now() - recovered;
    const primaryAfter = pair.primary.broker.stats();
    assert.ok(primaryAfter.attach > primaryBefore.attach, 'the ping attached a sender link');
    assert.equal(primaryAfter.messagesIn, primaryBefore.messagesIn, 'the ping sent no message');
    assert.equal(
      (await pair.peekAll(pair.primary, TOPIC, 'scale')).length,
      scaleBefore,
      'the scale subscription (no filter) got nothing from the ping',
    );
    const secondaryBefore = secondaryIn();
    await wake(parts);
    assert.equal(pair.primary.broker.stats().messagesIn, primaryAfter.messagesIn + 1, 'new sends go to the primary');
    assert.equal(secondaryIn(), secondaryBefore);
    t.diagnostic(
      `failover: first send to the backlog ${failedOverAt - started} ms after the first failure (interval ${intervalMs} ms, so ${failedOverAt - started - intervalMs} ms after it)`,
    );
    t.diagnostic(`return: both entities healthy ${returnedMs} ms after the primary came back (ping interval 300 ms)`);
  });

  test('after the outage, the ping clears every entity it proves: one failed over, one only suspect; health is ok with no new send', async () => {
    const { app, parts } = await startApp(300);
    await outage();
    await assert.rejects(
      parts.notifier.scheduleCheck({ v: 1, batchId: 'clears-1', attempt: 1, settledBefore: 0 }),
      TransientError,
    );
    await assert.rejects(wake(parts), TransientError);
    let failedOver = false;
    for (let i = 0; i < 100 && !failedOver; i++) {
      await pause(50);
      failedOver = await wake(parts).then(
        () => true,
        () => false,
      );
    }
    assert.ok(failedOver, 'the topic failed over');
    assert.equal(state(app, TOPIC), 'failedOver');
    assert.equal(state(app, WATCHDOG_QUEUE), 'suspect', 'the watchdog queue was not sent to again');
    assert.equal(app.health().status, 'degraded');

    const primaryBefore = pair.primary.broker.stats().messagesIn;
    pair.primary.broker.faults.outage(false);
    assert.ok(
      await waitFor(() => app.health().status === 'ok', 10_000),
      `health returns to ok without a send: ${JSON.stringify(app.health().serviceBus?.entities)}`,
    );
    assert.equal(state(app, WATCHDOG_QUEUE), 'healthy');
    assert.equal(pair.primary.broker.stats().messagesIn, primaryBefore, 'the pings sent no message');
  });

  test('a failing backlog queue is skipped; when every one fails, the send fails', async () => {
    const warnings: string[] = [];
    // A shuffle that keeps the configured order: backlog-0 is tried first, so the test sees it
    // fail and leave the rotation whatever the seed (a free shuffle skips it 1 run in 256).
    const inOrder = { ...systemClock, random: () => 0.999 };
    const { app, parts } = await startApp(0, {
      pingIntervalMs: 5000,
      log: { ...quietLog, warn: (m) => warnings.push(m) },
      clock: inOrder,
    });
    pair.secondary.broker.faults.refuseAttach('backlog-0', 'not-found');
    await outage();
    const before = await pair.backlog();
    for (let i = 0; i < 8; i++) await wake(parts);
    const after = await pair.backlog();
    const added = (q: string): number => (after.get(q)?.length ?? 0) - (before.get(q)?.length ?? 0);
    assert.equal(added('backlog-0'), 0);
    assert.equal(added('backlog-1'), 8, 'every event went to the queue still in the rotation');
    const out = app.health().serviceBus?.backlogOutOfRotation ?? [];
    assert.deepEqual(
      out.map((q) => [q.queue, q.red]),
      [['backlog-0', true]],
      'it left the rotation (for one ping interval)',
    );
    assert.equal(
      warnings.filter((w) => w.startsWith('backlog queue backlog-0 failed')).length,
      1,
      'tried once, then skipped',
    );
    pair.secondary.broker.faults.refuseAttach('backlog-1', 'disabled');
    await pause(300); // the SDK re-attaches its detached link at once; the next send then meets the refusal
    await assert.rejects(wake(parts), /no backlog queue took it/);
  });
});
