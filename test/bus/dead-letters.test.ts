/**
 * Service Bus dead letters, over the wire: the app (Azurite, the development broker, the real
 * SDKs) publishes its events to the broker; the test plays the Functions host (it receives,
 * dead-letters, or hands messages to the real handlers). Redrive goes through the admin route's
 * adapter; health through the anonymous route's adapter.
 */
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';

import { HttpRequest, type HttpResponseInit } from '@azure/functions';
import type { ServiceBusClient, ServiceBusReceivedMessage } from '@azure/service-bus';

import { onWorkDetected } from '../../functions/drain';
import { health } from '../../functions/health-http';
import { parseRedrive, postRedrive } from '../../functions/redrive-http';
import { onWatchdog } from '../../functions/watchdog';
import type { PushdrainApp } from '../../shared/app';
import type { Report } from '../../shared/billing/report';
import type { WatchdogCheck } from '../../shared/bus/watchdog-check';
import { watchdogCheckOutgoing } from '../../shared/bus/watchdog-check';
import { workDetectedOutgoing } from '../../shared/bus/work-detected';
import type { AppParts } from '../../shared/compose/app-parts';
import { TOPIC, WATCHDOG_QUEUE } from '../../shared/names';
import type { DeadLetterRedriveResult } from '../../shared/poison/dead-letter-redrive';
import type { HealthState } from '../../shared/status/process-health';
import { provisionStorage } from '../../tools/devstack/provision-storage';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { expectedReport } from '../../tools/testkit/oracle';
import { type BrokerHarness, receiveExactly, startTestBroker } from '../support/broker';
import { movableClock } from '../support/clock';
import { composedApp } from '../support/composed-app';
import { invalidOnPurpose } from '../support/invalid-on-purpose';
import { completed, context, post, report } from '../support/invoke';
import { until } from '../support/poll';
import { quietLog, testRuntime, testSettings, useStorage } from '../support/storage';

useStorage();

const DRAIN = `${TOPIC}/Subscriptions/drain`;
const AGGREGATE = `${TOPIC}/Subscriptions/aggregate`;
const SCALE = `${TOPIC}/Subscriptions/scale`;
const REASON = {
  deadLetterReason: 'MaxDeliveryCountExceeded',
  deadLetterErrorDescription: 'Message could not be consumed after 10 delivery attempts.',
};

interface Rig {
  bus: BrokerHarness;
  client: ServiceBusClient;
  app: PushdrainApp;
  parts: AppParts;
  advance: (ms: number) => void;
}

/** A fresh broker and an app publishing to it; both closed when the test ends (the app first). */
async function rig(t: TestContext, env: Record<string, string> = {}): Promise<Rig> {
  const bus = await startTestBroker();
  const time = movableClock();
  const { app, parts } = composedApp(testSettings({ ServiceBusConnection: bus.broker.connectionString, ...env }), {
    log: quietLog,
    clock: time.clock,
  });
  t.after(async () => {
    await app.close();
    await bus.close();
  });
  await provisionStorage(parts.settings);
  return { bus, client: bus.client(), app, parts, advance: (ms) => time.advance(ms) };
}

/** Receives everything available on a subscription or queue, up to `count`. */
async function take(
  client: ServiceBusClient,
  entity: string,
  count: number,
  timeoutMs = 5000,
): Promise<ServiceBusReceivedMessage[]> {
  const [topic, , sub] = entity.split('/');
  const receiver = sub ? client.createReceiver(topic ?? '', sub) : client.createReceiver(entity);
  try {
    const got = await receiveExactly(receiver, count, timeoutMs);
    for (const m of got) await receiver.completeMessage(m);
    return got;
  } finally {
    await receiver.close();
  }
}

/** Receives `count` messages and dead-letters them, as Service Bus does after the max delivery count. */
async function deadLetter(
  client: ServiceBusClient,
  entity: string,
  count: number,
): Promise<ServiceBusReceivedMessage[]> {
  const [topic, , sub] = entity.split('/');
  const receiver = sub ? client.createReceiver(topic ?? '', sub) : client.createReceiver(entity);
  try {
    const got = await receiveExactly(receiver, count);
    assert.equal(got.length, count, `${count} message(s) to dead-letter on ${entity}`);
    for (const m of got) await receiver.deadLetterMessage(m, REASON);
    return got;
  } finally {
    await receiver.close();
  }
}

async function send(
  client: ServiceBusClient,
  entity: string,
  messages: {
    body: unknown;
    applicationProperties?: Record<string, string | number | boolean>;
    contentType?: string;
    messageId?: string;
  }[],
): Promise<void> {
  const sender = client.createSender(entity);
  try {
    await sender.sendMessages(messages);
  } finally {
    await sender.close();
  }
}

async function redriveDeadLetters(app: PushdrainApp, body: unknown): Promise<DeadLetterRedriveResult> {
  const res = await postRedrive(
    app,
    new HttpRequest({
      method: 'POST',
      url: 'http://localhost/api/ops/redrive',
      body: { string: JSON.stringify(body) },
      headers: { 'content-type': 'application/json' },
    }),
    context('opsRedrive'),
  );
  assert.equal(res.status, 200, JSON.stringify(res.jsonBody));
  return res.jsonBody as DeadLetterRedriveResult;
}

/** The anonymous route's answer, once the recount it started (if any) shows `total`. */
async function healthShowing(app: PushdrainApp, total: number): Promise<HttpResponseInit & { state: HealthState }> {
  return until(`health showing ${total} dead letter(s)`, 15_000, () => {
    const res = health(app);
    const state = res.jsonBody as HealthState;
    return state.deadLetters?.total === total ? { ...res, state } : undefined;
  });
}

async function deadLetterCounts(parts: AppParts): Promise<Record<string, number>> {
  const counts = await parts.deadLetters?.count();
  assert.ok(counts);
  for (const c of counts) assert.equal(c.error, undefined, c.entity);
  return Object.fromEntries(counts.map((c) => [c.entity, c.deadLetters]));
}

/** Plays the drain and aggregate triggers until the batch is finished; returns the drain deliveries. */
async function serve(
  client: ServiceBusClient,
  app: PushdrainApp,
  batchId: string,
): Promise<ServiceBusReceivedMessage[]> {
  const receivers = {
    drain: client.createReceiver(TOPIC, 'drain'),
    aggregate: client.createReceiver(TOPIC, 'aggregate'),
  };
  const seen: ServiceBusReceivedMessage[] = [];
  try {
    await until(`batch ${batchId} finished`, 60_000, async () => {
      for (const [name, receiver] of Object.entries(receivers)) {
        for (const m of await receiver.receiveMessages(20, { maxWaitTimeInMs: 200 })) {
          if (name === 'drain') seen.push(m);
          await onWorkDetected(app, m.body, context(name));
          await receiver.completeMessage(m);
        }
      }
      return (await completed(app, batchId)) ? true : undefined;
    });
    return seen;
  } finally {
    await Promise.all(Object.values(receivers).map((r) => r.close()));
  }
}

describe('Service Bus dead letters: redrive and health', () => {
  test('dead-lettered events and a watchdog check: health counts them (degraded, counts only); the admin route resubmits them; they are processed, the batch completes, health is ok', async (t) => {
    const { client, app, parts, advance } = await rig(t, { PUSHDRAIN_CHUNK_SIZE: '250' });
    const txns = generate(1000, 901, 30);
    const { batchId } = (await post(app, toNdjson(txns))).jsonBody as { batchId: string };
    // The events ingest published: every drain delivery fails until Service Bus dead-letters it.
    const inspection = await parts.inspector?.inspect();
    const events = (inspection?.available && inspection.entities.find((e) => e.entity === DRAIN)?.active) || 0;
    assert.ok(events > 0, 'ingest published its WorkDetected events');
    const originals = await deadLetter(client, DRAIN, events);
    await take(client, SCALE, events); // the scaling agent took its copies
    const check: WatchdogCheck = { v: 1, batchId, attempt: 1, settledBefore: 0 };
    await send(client, WATCHDOG_QUEUE, [watchdogCheckOutgoing(check)]);
    const [checkOriginal] = await deadLetter(client, WATCHDOG_QUEUE, 1);

    // The inspection above counted 0 dead letters; health recounts once that count is 5 minutes old.
    assert.equal(
      (health(app).jsonBody as HealthState).deadLetters?.total,
      0,
      "the last count (the inspection's) is fresh: no recount yet",
    );
    advance(5 * 60_000);
    const sick = await healthShowing(app, events + 1);
    assert.equal(sick.state.status, 'degraded');
    assert.deepEqual(sick.state.deadLetters?.byEntity, {
      [DRAIN]: events,
      [AGGREGATE]: 0,
      [SCALE]: 0,
      [WATCHDOG_QUEUE]: 1,
    });
    const text = JSON.stringify(sick.jsonBody);
    for (const secret of ['MaxDeliveryCount', batchId, 'queueName', 'delivery attempts'])
      assert.ok(!text.includes(secret), `the anonymous answer holds no ${secret}`);

    const result = await redriveDeadLetters(app, { deadLetters: true });
    assert.deepEqual(result, {
      deadLetters: true,
      moved: events + 1,
      byEntity: { [DRAIN]: events, [AGGREGATE]: 0, [SCALE]: 0, [WATCHDOG_QUEUE]: 1 },
      kept: [],
      failed: {},
    });
    const well = health(app).jsonBody as HealthState;
    assert.equal(well.deadLetters?.total, 0, 'the redrive recounted: health is right at once');
    assert.equal(well.status, 'ok');
    assert.deepEqual(await deadLetterCounts(parts), { [DRAIN]: 0, [AGGREGATE]: 0, [SCALE]: 0, [WATCHDOG_QUEUE]: 0 });

    const delivered = await serve(client, app, batchId);
    // The copies: same bodies and routing properties, without what dead-lettering added.
    const shape = (m: ServiceBusReceivedMessage): unknown => ({
      body: m.body,
      properties: m.applicationProperties,
      contentType: m.contentType,
      subject: m.subject,
    });
    assert.deepEqual(delivered.slice(0, events).map(shape).sort(byJson), originals.map(shape).sort(byJson));
    assert.equal(
      (await take(client, SCALE, events, 3000)).length >= events,
      true,
      'a resend to the topic reaches every subscription whose filter matches (scale takes all)',
    );
    const [again] = await take(client, WATCHDOG_QUEUE, 1);
    assert.deepEqual(again?.body, check);
    assert.equal(again?.messageId, checkOriginal?.messageId);
    assert.deepEqual(again?.applicationProperties ?? {}, {});
    assert.deepEqual(await onWatchdog(app, again?.body, context('watchdog')), { kind: 'finished' });
    assert.deepEqual(((await report(app, batchId)).jsonBody as Report).rows, expectedReport(txns).rows);
  });

  test('max bounds a run over all entities; an unreadable dead letter is reported and kept, run after run; entity picks one', async (t) => {
    const { client, app, parts } = await rig(t);
    const queueName = parts.names.inputQueue(0);
    const event = { storageAccount: 'devstoreaccount1', queueName, payloadSize: 1, role: 'input' as const };
    await send(client, TOPIC, [
      ...[1, 2, 3].map((i) => ({ ...workDetectedOutgoing({ ...event, payloadSize: i }), messageId: `good-${i}` })),
      { body: 'not a WorkDetected', applicationProperties: { role: 'input' }, messageId: 'garbage' },
    ]);
    await deadLetter(client, DRAIN, 4);
    await take(client, SCALE, 4);
    await send(client, WATCHDOG_QUEUE, [
      watchdogCheckOutgoing({ v: 1, batchId: 'b-dead', attempt: 2, settledBefore: 0 }),
      { body: { v: 2, batchId: 'b-bad' }, messageId: 'bad-check' },
    ]);
    await deadLetter(client, WATCHDOG_QUEUE, 2);

    const first = await redriveDeadLetters(app, { deadLetters: true, max: 2 });
    assert.equal(first.moved, 2);
    assert.deepEqual(first.byEntity, { [DRAIN]: 2 }, 'stopped at max: the other entities were not touched');
    assert.deepEqual(await deadLetterCounts(parts), { [DRAIN]: 2, [AGGREGATE]: 0, [SCALE]: 0, [WATCHDOG_QUEUE]: 2 });

    const onlyWatchdog = await redriveDeadLetters(app, { deadLetters: true, entity: WATCHDOG_QUEUE });
    assert.deepEqual(onlyWatchdog.byEntity, { [WATCHDOG_QUEUE]: 1 });
    assert.deepEqual(
      onlyWatchdog.kept.map((k) => [k.entity, k.messageId, k.deadLetterReason]),
      [[WATCHDOG_QUEUE, 'bad-check', 'MaxDeliveryCountExceeded']],
    );
    assert.match(onlyWatchdog.kept[0]?.problem ?? '', /v1 check/);

    const rest = await redriveDeadLetters(app, { deadLetters: true });
    assert.equal(rest.moved, 1);
    assert.deepEqual(rest.kept.map((k) => [k.entity, k.messageId]).sort(byJson), [
      [WATCHDOG_QUEUE, 'bad-check'],
      [DRAIN, 'garbage'],
    ]);
    assert.match(rest.kept.find((k) => k.entity === DRAIN)?.problem ?? '', /not a JSON object/);
    assert.ok(rest.kept.every((k) => /^\d+$/.test(k.sequenceNumber)));
    // Kept, not lost: still dead-lettered, and the next run reports them again.
    assert.deepEqual(await deadLetterCounts(parts), { [DRAIN]: 1, [AGGREGATE]: 0, [SCALE]: 0, [WATCHDOG_QUEUE]: 1 });
    const third = await redriveDeadLetters(app, { deadLetters: true });
    assert.equal(third.moved, 0);
    assert.equal(third.kept.length, 2);
    assert.equal(
      (health(app).jsonBody as HealthState).status,
      'degraded',
      'what is still dead-lettered keeps health degraded',
    );

    const resent = await take(client, DRAIN, 3);
    assert.deepEqual(resent.map((m) => m.messageId).sort(), ['good-1', 'good-2', 'good-3']);
    assert.deepEqual(
      (await take(client, WATCHDOG_QUEUE, 1)).map((m) => m.messageId),
      ['b-dead:2'],
    );
  });

  test('a send that fails leaves the dead letters where they were; the next run moves them', async (t) => {
    const { bus, client, app, parts } = await rig(t);
    await send(client, TOPIC, [
      workDetectedOutgoing({
        storageAccount: 'devstoreaccount1',
        queueName: parts.names.inputQueue(1),
        payloadSize: 1,
        role: 'input',
      }),
    ]);
    await deadLetter(client, DRAIN, 1);
    bus.broker.faults.serverBusy(1000);
    const failed = await redriveDeadLetters(app, { deadLetters: true, entity: DRAIN });
    bus.broker.faults.reset();
    assert.equal(failed.moved, 0);
    assert.match(failed.failed[DRAIN] ?? '', /busy/i);
    assert.equal((await deadLetterCounts(parts))[DRAIN], 1, 'still dead-lettered');
    const ok = await redriveDeadLetters(app, { deadLetters: true, entity: DRAIN });
    assert.deepEqual([ok.moved, ok.failed], [1, {}]);
    assert.equal((await take(client, DRAIN, 1)).length, 1);
  });

  test('health: counts from memory, one recount per 5 minutes however often it is probed, none while nothing asks; the status report feeds it', async (t) => {
    const { bus, client, app, advance } = await rig(t);
    await send(client, WATCHDOG_QUEUE, [watchdogCheckOutgoing({ v: 1, batchId: 'b-x', attempt: 1, settledBefore: 0 })]);
    await deadLetter(client, WATCHDOG_QUEUE, 1);
    const management = (): number => bus.broker.stats().management ?? 0;

    const idle = management();
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(management(), idle, 'no Service Bus operation while nothing calls health or status');
    assert.equal(app.health().deadLetters?.total, null, 'not counted yet; health() alone never counts');

    await healthShowing(app, 1);
    const counted = management();
    assert.ok(counted > idle);
    for (let i = 0; i < 50; i++) health(app);
    advance(4 * 60_000);
    for (let i = 0; i < 50; i++) health(app);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(management(), counted, '100 probes within 5 minutes: no further Service Bus operation');
    assert.ok(
      ((health(app).jsonBody as HealthState).deadLetters?.ageSeconds ?? 0) >= 240,
      'the age of the counts is shown',
    );

    await redriveDeadLetters(app, { deadLetters: true });
    await take(client, WATCHDOG_QUEUE, 1);
    advance(2 * 60_000);
    assert.equal((health(app).jsonBody as HealthState).deadLetters?.total, 0, 'the redrive recounted');
    const afterRedrive = management();
    advance(6 * 60_000);
    health(app);
    await until('a recount after 5 minutes', 10_000, () => (management() > afterRedrive ? true : undefined));

    // The status report peeks the dead-letter queues anyway: its counts are health's too.
    await send(client, WATCHDOG_QUEUE, [watchdogCheckOutgoing({ v: 1, batchId: 'b-y', attempt: 1, settledBefore: 0 })]);
    await deadLetter(client, WATCHDOG_QUEUE, 1);
    await app.statusReport();
    const fromStatus = app.health();
    assert.equal(fromStatus.deadLetters?.total, 1);
    assert.equal(fromStatus.status, 'degraded');
    assert.ok((fromStatus.deadLetters?.ageSeconds ?? 99) < 5);
  });

  test('the admin body: deadLetters selects Service Bus; poison-only fields, unknown entities and bad max are refused; no Service Bus connection is a clear 400', async () => {
    assert.deepEqual(parseRedrive('{"deadLetters":true}'), { kind: 'deadLetters', request: {} });
    assert.deepEqual(parseRedrive('{"deadLetters":true,"entity":"batch-watchdog","max":5}'), {
      kind: 'deadLetters',
      request: { entity: 'batch-watchdog', max: 5 },
    });
    assert.deepEqual(parseRedrive('{"deadLetters":false,"queue":"work-0"}'), {
      kind: 'poison',
      request: { queue: 'work-0' },
    });
    assert.deepEqual(parseRedrive(''), { kind: 'poison', request: {} });
    for (const [body, message] of [
      ['{"deadLetters":true,"queue":"work-0"}', /queue select Storage poison/],
      ['{"deadLetters":true,"batchId":"b-1"}', /batchId select Storage poison/],
      ['{"deadLetters":"yes"}', /deadLetters must be true or false/],
      ['{"entity":"batch-watchdog"}', /needs deadLetters: true/],
      ['{"deadLetters":true,"entity":7}', /entity must be a string/],
    ] as const) {
      assert.throws(() => parseRedrive(body), message, body);
    }
    const { app } = await testRuntime();
    const call = (body: unknown): Promise<HttpResponseInit> =>
      postRedrive(
        app,
        new HttpRequest({
          method: 'POST',
          url: 'http://localhost/api/ops/redrive',
          body: { string: JSON.stringify(body) },
          headers: { 'content-type': 'application/json' },
        }),
        context('opsRedrive'),
      );
    const none = await call({ deadLetters: true });
    assert.equal(none.status, 400);
    assert.match((none.jsonBody as { message: string }).message, /ServiceBusConnection is not configured/);
    assert.equal(
      (health(app).jsonBody as HealthState).deadLetters,
      undefined,
      'without Service Bus, health has no dead-letter counts',
    );
  });

  test('the admin route refuses an unknown entity and a bad max before touching Service Bus', async (t) => {
    const { bus, app } = await rig(t);
    const JSON_TYPE = { 'content-type': 'application/json' };
    const before = bus.broker.stats().management ?? 0;
    for (const body of [
      { deadLetters: true, entity: 'work-detected/Subscriptions/nope' },
      { deadLetters: true, max: 0 },
      { deadLetters: true, max: 100_001 },
    ]) {
      const res = await postRedrive(
        app,
        new HttpRequest({
          method: 'POST',
          url: 'http://localhost/api/ops/redrive',
          body: { string: JSON.stringify(body) },
          // A max out of 1–100,000 is outside the document; an entity is any string there.
          headers: 'max' in body ? invalidOnPurpose(JSON_TYPE) : JSON_TYPE,
        }),
        context('opsRedrive'),
      );
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.match(
        (res.jsonBody as { message: string }).message,
        /entity must be one of work-detected\/Subscriptions\/drain, .*batch-watchdog|max must be a whole number/,
      );
    }
    assert.equal(bus.broker.stats().management ?? 0, before);
  });
});

function byJson(a: unknown, b: unknown): number {
  return JSON.stringify(a).localeCompare(JSON.stringify(b));
}
