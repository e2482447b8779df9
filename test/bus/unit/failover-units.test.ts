/**
 * The failover logic on its own, with a manual clock and in-memory channels: the one table,
 * the per-entity states and their interval, the backlog rotation, the backlog message codec,
 * the syphon's choices, and the settings. The same paths run over the wire in failover-wire,
 * failover-busy and failover-episode.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { watchdogCheckOutgoing } from '../../../shared/bus/watchdog-check';
import type { WorkDetected } from '../../../shared/bus/work-detected';
import { workDetectedOutgoing } from '../../../shared/bus/work-detected';
import { loadSettings, syphonQueues } from '../../../shared/config/settings';
import { PermanentError, TransientError } from '../../../shared/errors';
import type { BlobRef } from '../../../shared/layout';
import { EVENT_TTL_MS, TOPIC, WATCHDOG_QUEUE, WATCHDOG_TTL_MS } from '../../../shared/names';
import { BACKLOG_PROPERTY, fromBacklog, toBacklogMessage } from '../../../shared/notify/backlog-message';
import { writeBacklogRejection } from '../../../shared/notify/backlog-rejection';
import { EntityFailover } from '../../../shared/notify/failover-state';
import { PairedPublisher } from '../../../shared/notify/paired-publisher';
import { type RejectedBacklogMessage, Syphon, SYPHON_MAX_BACKOFF_MS } from '../../../shared/notify/syphon';
import type { BlobStore, WriteOptions } from '../../../shared/ports';
import { failoverClass, retryDecision, SERVER_BUSY_WAIT_MS } from '../../../shared/retry/transient';
import { FakeChannel, flush, ManualClock, sbError, spent } from '../../support/failover-fakes';
import { quietLog } from '../../support/storage';

const EVENT: WorkDetected = {
  storageAccount: 'acct',
  queueName: 'work-1',
  payloadSize: 10,
  role: 'input',
  batchId: 'b1',
};
const INTERVAL = 60_000;
const PING = 10_000;

function paired(options: { interval?: number; queues?: string[]; randoms?: number[] } = {}) {
  const clock = new ManualClock(options.randoms);
  const primary = new FakeChannel();
  const secondary = new FakeChannel();
  const publisher = new PairedPublisher({
    primary,
    secondary,
    backlogQueues: options.queues ?? ['backlog-0', 'backlog-1'],
    failoverIntervalMs: options.interval ?? INTERVAL,
    pingIntervalMs: PING,
    clock,
    log: quietLog,
  });
  return { clock, primary, secondary, publisher };
}

const outage = (): Error =>
  spent(sbError('ServiceTimeout'), sbError('GeneralError', 'ECONNRESET: connect ECONNRESET 127.0.0.1:5672'));

describe('the failover table (shared/retry/transient.ts)', () => {
  test('timeouts, communication problems, socket errors and quota exceeded fail over; ServerBusy waits; misconfiguration never fails over', () => {
    for (const code of [
      'ServiceTimeout',
      'ServiceCommunicationProblem',
      'GeneralError',
      'QuotaExceeded',
      'ECONNREFUSED',
      'ETIMEDOUT',
    ]) {
      assert.equal(failoverClass(sbError(code)), 'outage', code);
    }
    assert.equal(failoverClass(Object.assign(new Error('aborted'), { name: 'AbortError' })), 'outage');
    assert.equal(failoverClass(sbError('ServiceBusy')), 'busy');
    for (const code of [
      'UnauthorizedAccess',
      'MessagingEntityNotFound',
      'MessagingEntityDisabled',
      'MessageSizeExceeded',
    ]) {
      assert.equal(failoverClass(sbError(code)), 'permanent', code);
    }
    assert.equal(failoverClass(new TypeError('a bug')), 'permanent', 'a bug does not heal elsewhere');
    assert.equal(
      failoverClass(new Error('Failed to connect')),
      'outage',
      "the AMQP layer's code-less errors are communication problems",
    );
  });

  test("the SDK's AggregateError of spent retries: a misconfiguration in any attempt wins, then throttling, then an outage", () => {
    assert.equal(failoverClass(outage()), 'outage');
    assert.equal(failoverClass(spent(sbError('ServiceTimeout'), sbError('UnauthorizedAccess'))), 'permanent');
    assert.equal(failoverClass(spent(sbError('ServiceTimeout'), sbError('ServiceBusy'))), 'busy');
    // The retry decision reads the same attempts: ServerBusy behind an AggregateError still waits 10 s.
    assert.deepEqual(retryDecision(spent(sbError('ServiceBusy'), sbError('ServiceBusy'))), {
      retry: true,
      waitMs: SERVER_BUSY_WAIT_MS,
    });
    assert.deepEqual(retryDecision(spent(sbError('ServiceBusy'), sbError('UnauthorizedAccess'))), { retry: false });
  });
});

describe("one entity's states (EntityFailover)", () => {
  test('healthy → suspect on the first outage; failed over only once the interval passed with no success', () => {
    const s = new EntityFailover(TOPIC, 1000);
    assert.equal(s.failed('outage', 0, 'x'), 'fail');
    assert.equal(s.health().state, 'suspect');
    assert.equal(s.failed('outage', 999, 'x'), 'fail');
    assert.equal(s.failed('outage', 1000, 'x'), 'failover');
    assert.equal(s.failedOver, true);
    s.succeeded();
    assert.deepEqual(s.health(), { state: 'healthy', red: false });
  });

  test('a success while suspect starts the interval over; interval 0 fails over at once', () => {
    const s = new EntityFailover(TOPIC, 1000);
    s.failed('outage', 0, 'x');
    s.succeeded();
    assert.equal(s.failed('outage', 1500, 'x'), 'fail', 'a new episode, not the old one');
    assert.equal(new EntityFailover(TOPIC, 0).failed('outage', 0, 'x'), 'failover');
  });

  test('ServerBusy imposes a 10 s wait and never moves the state; a permanent failure turns it red until a success', () => {
    const s = new EntityFailover(TOPIC, 0);
    assert.equal(s.failed('busy', 100, 'ServiceBusy'), 'fail');
    assert.equal(s.busyWait(100), SERVER_BUSY_WAIT_MS);
    assert.equal(s.health().state, 'healthy');
    assert.equal(s.failed('permanent', 200, 'UnauthorizedAccess: no'), 'fail');
    assert.deepEqual(s.health(), { state: 'healthy', red: true, lastError: 'UnauthorizedAccess: no' });
    s.succeeded();
    assert.equal(s.health().red, false);
  });
});

describe('PairedPublisher with a manual clock', () => {
  test('healthy: every send goes to the primary, nothing to the secondary, and no timer is held', async () => {
    const { publisher, primary, secondary, clock } = paired();
    await publisher.send(TOPIC, [workDetectedOutgoing(EVENT)]);
    await publisher.schedule(
      WATCHDOG_QUEUE,
      [watchdogCheckOutgoing({ v: 1, batchId: 'b1', attempt: 1, settledBefore: 0 })],
      5000,
    );
    assert.equal(primary.sent.length, 2);
    assert.equal(secondary.sent.length, 0);
    assert.equal(clock.sleeping, 0);
    assert.equal(publisher.health().status, 'ok');
    await publisher.close();
  });

  test('an outage shorter than the interval: the errors reach the caller, nothing goes to the backlog', async () => {
    const { publisher, primary, secondary, clock } = paired();
    primary.failing.set('*', outage);
    primary.pingError = outage;
    await assert.rejects(publisher.send(TOPIC, [workDetectedOutgoing(EVENT)]), TransientError);
    await clock.advance(INTERVAL - 1);
    await assert.rejects(publisher.send(TOPIC, [workDetectedOutgoing(EVENT)]), TransientError);
    assert.equal(publisher.health().entities[TOPIC]?.state, 'suspect');
    primary.failing.clear();
    await publisher.send(TOPIC, [workDetectedOutgoing(EVENT)]);
    assert.equal(publisher.health().entities[TOPIC]?.state, 'healthy');
    assert.equal(secondary.sent.length, 0);
    await publisher.close();
  });

  test('an outage longer than the interval: the send that finds it over goes to a backlog queue with its routing properties; the next ones skip the primary', async () => {
    const { publisher, primary, secondary, clock } = paired({ randoms: [0.9] });
    primary.failing.set(TOPIC, outage);
    primary.pingError = outage;
    await assert.rejects(publisher.send(TOPIC, [workDetectedOutgoing(EVENT)]));
    await clock.advance(INTERVAL);
    await publisher.schedule(TOPIC, [workDetectedOutgoing(EVENT)], 2000);
    await publisher.send(TOPIC, [workDetectedOutgoing(EVENT)]);
    assert.equal(secondary.sent.length, 2);
    const [first] = secondary.sent;
    assert.ok(first && /^backlog-[01]$/.test(first.entity));
    assert.equal(first.at, undefined, 'backlog copies are sent now; the syphon schedules them on the primary');
    const props = first.messages[0]!.applicationProperties;
    assert.equal(props[BACKLOG_PROPERTY.destination], TOPIC);
    assert.equal(props.role, 'input');
    assert.equal(props.queueName, 'work-1');
    assert.equal(props[BACKLOG_PROPERTY.timeToLive], EVENT_TTL_MS);
    assert.equal(props[BACKLOG_PROPERTY.scheduledEnqueueTime], new Date(clock.now() + 2000).toISOString());
    assert.equal(first.messages[0]!.timeToLive, EVENT_TTL_MS + 2000);
    // The watchdog queue is its own entity: it has not failed, so it still goes to the primary.
    await publisher.schedule(
      WATCHDOG_QUEUE,
      [watchdogCheckOutgoing({ v: 1, batchId: 'b1', attempt: 1, settledBefore: 0 })],
      1000,
    );
    assert.equal(primary.to(WATCHDOG_QUEUE).length, 1);
    assert.equal(publisher.health().status, 'degraded');
    await publisher.close();
  });

  test('the ping: every ping interval while failed over, never a send; when it succeeds, sends return to the primary', async () => {
    const { publisher, primary, secondary, clock } = paired({ interval: 0 });
    primary.failing.set('*', outage);
    primary.pingError = outage;
    await publisher.send(TOPIC, [workDetectedOutgoing(EVENT)]);
    assert.equal(secondary.sent.length, 1);
    await clock.advance(PING);
    assert.deepEqual(primary.pings, [TOPIC]);
    assert.equal(publisher.health().entities[TOPIC]?.state, 'failedOver');
    primary.failing.clear();
    primary.pingError = undefined;
    await clock.advance(PING);
    assert.deepEqual(primary.pings, [TOPIC, TOPIC]);
    assert.equal(publisher.health().entities[TOPIC]?.state, 'healthy');
    assert.equal(clock.sleeping, 0, 'the ping loop ends once every entity is back');
    await publisher.send(TOPIC, [workDetectedOutgoing(EVENT)]);
    assert.equal(primary.to(TOPIC).length, 1);
    assert.equal(secondary.sent.length, 1);
    await publisher.close();
  });

  test('after an outage, the ping clears a suspect entity that nothing is sent to, beside a failed-over one; then the loop ends', async () => {
    const { publisher, primary, clock } = paired();
    primary.failing.set('*', outage);
    primary.pingError = outage;
    await assert.rejects(
      publisher.schedule(
        WATCHDOG_QUEUE,
        [watchdogCheckOutgoing({ v: 1, batchId: 'b1', attempt: 1, settledBefore: 0 })],
        1000,
      ),
      TransientError,
    );
    await assert.rejects(publisher.send(TOPIC, [workDetectedOutgoing(EVENT)]), TransientError);
    await clock.advance(INTERVAL);
    await publisher.send(TOPIC, [workDetectedOutgoing(EVENT)]); // to the backlog
    assert.equal(publisher.health().entities[TOPIC]?.state, 'failedOver');
    assert.equal(publisher.health().entities[WATCHDOG_QUEUE]?.state, 'suspect');
    assert.ok(primary.pings.includes(WATCHDOG_QUEUE), 'the suspect entity is pinged too');
    primary.failing.clear();
    primary.pingError = undefined;
    const sent = primary.sent.length;
    await clock.advance(PING);
    assert.equal(publisher.health().entities[WATCHDOG_QUEUE]?.state, 'healthy');
    assert.equal(publisher.health().entities[TOPIC]?.state, 'healthy');
    assert.equal(publisher.health().status, 'ok');
    assert.equal(primary.sent.length, sent, 'a ping is not a send');
    assert.equal(clock.sleeping, 0, 'the ping loop ends once every entity is back');
    await publisher.close();
  });

  test('ServerBusy: the retry waits at least 10 s, a second refusal reaches the caller with Retry-After 10 s, and it never fails over (interval 0)', async () => {
    const { publisher, primary, secondary, clock } = paired({ interval: 0 });
    primary.failing.set('*', () => spent(sbError('ServiceBusy'), sbError('ServiceBusy')));
    const started = clock.now();
    const sending = publisher.send(TOPIC, [workDetectedOutgoing(EVENT)]);
    const result = sending.then(
      () => undefined,
      (e: unknown) => e,
    );
    await clock.advance(SERVER_BUSY_WAIT_MS - 1);
    assert.deepEqual(clock.slept, [SERVER_BUSY_WAIT_MS]);
    primary.failing.clear(); // it clears before the wait is over: the retry still waits the full 10 s
    await clock.advance(1);
    assert.equal(await result, undefined);
    assert.equal(clock.now() - started, SERVER_BUSY_WAIT_MS);
    primary.failing.set('*', () => spent(sbError('ServiceBusy')));
    const second = publisher.send(TOPIC, [workDetectedOutgoing(EVENT)]).then(
      () => assert.fail('should fail'),
      (e: unknown) => e,
    );
    await clock.advance(SERVER_BUSY_WAIT_MS);
    const error = await second;
    assert.ok(error instanceof TransientError);
    assert.equal(error.retryAfterMs, SERVER_BUSY_WAIT_MS);
    assert.equal(secondary.sent.length, 0);
    assert.equal(publisher.health().entities[TOPIC]?.state, 'healthy');
    await publisher.close();
  });

  test('unauthorized, not found, disabled, too large: a PermanentError, no failover even at interval 0, health red until a success', async () => {
    for (const code of [
      'UnauthorizedAccess',
      'MessagingEntityNotFound',
      'MessagingEntityDisabled',
      'MessageSizeExceeded',
    ]) {
      const { publisher, primary, secondary } = paired({ interval: 0 });
      primary.failing.set(TOPIC, () => spent(sbError(code)));
      await assert.rejects(publisher.send(TOPIC, [workDetectedOutgoing(EVENT)]), PermanentError);
      assert.equal(secondary.sent.length, 0, code);
      assert.equal(publisher.health().status, 'red', code);
      assert.equal(publisher.health().entities[TOPIC]?.state, 'healthy', code);
      primary.failing.clear();
      await publisher.send(TOPIC, [workDetectedOutgoing(EVENT)]);
      assert.equal(publisher.health().status, 'ok', code);
      await publisher.close();
    }
  });

  test('a failing backlog queue is skipped and leaves the rotation for a ping interval; when every one has failed, the send fails', async () => {
    const { publisher, primary, secondary, clock } = paired({
      interval: 0,
      queues: ['backlog-0', 'backlog-1', 'backlog-2'],
      randoms: [0.9, 0.1],
    }); // the first shuffle puts backlog-1 first
    primary.failing.set('*', outage);
    primary.pingError = outage;
    secondary.failing.set('backlog-1', () => spent(sbError('MessagingEntityNotFound')));
    for (let i = 0; i < 6; i++) await publisher.send(TOPIC, [workDetectedOutgoing(EVENT)]);
    assert.equal(secondary.sent.length, 6);
    assert.ok(secondary.sent.every((s) => s.entity !== 'backlog-1'));
    const out = publisher.health().backlogOutOfRotation;
    assert.deepEqual(
      out.map((q) => [q.queue, q.red]),
      [['backlog-1', true]],
    );
    assert.equal(publisher.health().status, 'red');
    secondary.failing.set('*', outage);
    await assert.rejects(publisher.send(TOPIC, [workDetectedOutgoing(EVENT)]), /no backlog queue took it/);
    await assert.rejects(
      publisher.send(TOPIC, [workDetectedOutgoing(EVENT)]),
      /every backlog queue is out of the rotation/,
    );
    secondary.failing.clear();
    await clock.advance(PING);
    await publisher.send(TOPIC, [workDetectedOutgoing(EVENT)]);
    assert.equal(secondary.sent.length, 7, 'back in the rotation after the cool-down');
    await publisher.close();
  });

  test('close() ends the ping loop and closes both channels', async () => {
    const { publisher, primary, secondary, clock } = paired({ interval: 0 });
    primary.failing.set('*', outage);
    await publisher.send(TOPIC, [workDetectedOutgoing(EVENT)]);
    assert.equal(clock.sleeping, 1);
    await publisher.close();
    await flush();
    assert.ok(primary.closed && secondary.closed);
    await clock.advance(PING * 3);
    assert.deepEqual(primary.pings, [], 'no ping after close');
  });
});

describe('backlog messages and the syphon', () => {
  const now = Date.UTC(2025, 0, 1);
  const delivery = (m: ReturnType<typeof workDetectedOutgoing>, extra: Record<string, unknown> = {}) => ({
    body: JSON.parse(JSON.stringify(m.body)) as unknown,
    applicationProperties: { ...m.applicationProperties, ...extra },
    ...(m.messageId ? { messageId: m.messageId } : {}),
    deliveryCount: 0,
  });

  test('a backlog copy round-trips to the original message, destination, TTL and schedule', () => {
    const at = new Date(now + 60_000);
    const copy = toBacklogMessage(
      WATCHDOG_QUEUE,
      watchdogCheckOutgoing({ v: 1, batchId: 'b9', attempt: 2, settledBefore: 3 }),
      at,
      now,
    );
    const back = fromBacklog(delivery(copy));
    assert.ok(typeof back !== 'string', typeof back === 'string' ? back : '');
    assert.equal(back.destination, WATCHDOG_QUEUE);
    assert.equal(back.scheduledAt?.getTime(), at.getTime());
    assert.equal(back.message.messageId, 'b9:2');
    assert.equal(back.message.timeToLive, WATCHDOG_TTL_MS);
    assert.deepEqual(back.message.body, { v: 1, batchId: 'b9', attempt: 2, settledBefore: 3 });
    const event = fromBacklog(delivery(toBacklogMessage(TOPIC, workDetectedOutgoing(EVENT), undefined, now)));
    assert.ok(typeof event !== 'string');
    assert.deepEqual(event.message.applicationProperties, { role: 'input', queueName: 'work-1' });
    assert.equal(event.scheduledAt, undefined);
  });

  test('malformed copies say what is wrong', () => {
    const good = toBacklogMessage(TOPIC, workDetectedOutgoing(EVENT), undefined, now);
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ [BACKLOG_PROPERTY.destination]: 'elsewhere' }, /backlogDestination/],
      [{ [BACKLOG_PROPERTY.timeToLive]: -1 }, /backlogTimeToLiveMs/],
      [{ [BACKLOG_PROPERTY.scheduledEnqueueTime]: 'soon' }, /ISO time/],
      [{ role: 'output' }, /disagree/],
    ];
    const reason = (r: ReturnType<typeof fromBacklog>): string => (typeof r === 'string' ? r : 'restorable');
    for (const [extra, why] of cases) assert.match(reason(fromBacklog(delivery(good, extra))), why);
    assert.match(reason(fromBacklog({ ...delivery(good), body: 'not json' })), /not a WorkDetected/);
    assert.match(reason(fromBacklog({ body: {}, applicationProperties: undefined, deliveryCount: 0 })), /absent/);
  });

  test('a malformed backlog message is kept as JSON under rejected/backlog/, named by its message id, or by its hash without one', async () => {
    const written: { path: string; record: unknown; contentType: string | undefined }[] = [];
    const blobs = {
      write: (ref: BlobRef, body: Buffer, options: WriteOptions) =>
        Promise.resolve(
          void written.push({
            path: `${ref.container}/${ref.name}`,
            record: JSON.parse(body.toString()),
            contentType: options.contentType,
          }),
        ),
    } as unknown as BlobStore;
    const rejected: RejectedBacklogMessage = {
      reason: 'not a WorkDetected event',
      messageId: 'm/1',
      applicationProperties: { role: 'input' },
      body: 'x',
      at: '2026-01-01T00:00:00.000Z',
    };
    await writeBacklogRejection(blobs, rejected);
    const { messageId: _id, ...anonymous } = rejected;
    await writeBacklogRejection(blobs, anonymous);
    await writeBacklogRejection(blobs, anonymous);
    assert.deepEqual(written[0], {
      path: 'rejected/backlog/m_1.json',
      record: rejected,
      contentType: 'application/json',
    });
    assert.match(written[1]?.path ?? '', /^rejected\/backlog\/[0-9a-f]{32}\.json$/);
    assert.equal(written[2]?.path, written[1]?.path, 'the same record, the same name: a redelivery overwrites it');
  });

  function syphon(randoms = [0.5]) {
    const clock = new ManualClock(randoms);
    const primary = new FakeChannel();
    const setAside: RejectedBacklogMessage[] = [];
    const s = new Syphon({
      primary,
      clock,
      log: quietLog,
      pingIntervalMs: PING,
      setAside: (r) => Promise.resolve(void setAside.push(r)),
    });
    return { clock, primary, setAside, s };
  }

  test('restores now, or schedules when the enqueue time is still ahead', async () => {
    const { clock, primary, s } = syphon();
    const ahead = new Date(clock.now() + 5000);
    assert.deepEqual(
      await s.restore(
        delivery(
          toBacklogMessage(
            WATCHDOG_QUEUE,
            watchdogCheckOutgoing({ v: 1, batchId: 'b', attempt: 1, settledBefore: 0 }),
            ahead,
            clock.now(),
          ),
        ),
      ),
      {
        kind: 'restored',
        destination: WATCHDOG_QUEUE,
        scheduledFor: ahead.toISOString(),
      },
    );
    const past = toBacklogMessage(TOPIC, workDetectedOutgoing(EVENT), new Date(clock.now() + 5000), clock.now());
    await clock.advance(6000);
    assert.deepEqual(await s.restore(delivery(past)), { kind: 'restored', destination: TOPIC });
    assert.deepEqual(
      primary.sent.map((x) => [x.entity, x.at?.getTime()]),
      [
        [WATCHDOG_QUEUE, ahead.getTime()],
        [TOPIC, undefined],
      ],
    );
  });

  test('primary down: backs off (ping interval, doubling per delivery, capped), then throws so the host abandons', async () => {
    const { clock, primary, s } = syphon();
    primary.failing.set('*', outage);
    const copy = toBacklogMessage(TOPIC, workDetectedOutgoing(EVENT), undefined, clock.now());
    const attempt = s.restore({ ...delivery(copy), deliveryCount: 2 }).then(
      () => assert.fail('should throw'),
      (e: unknown) => e,
    );
    await clock.advance(4 * PING);
    assert.ok((await attempt) instanceof TransientError);
    assert.deepEqual(clock.slept, [0.75 * 4 * PING]);
    assert.equal(s.backoffMs(0), 0.75 * PING);
    assert.equal(s.backoffMs(50), Math.min(32 * PING, SYPHON_MAX_BACKOFF_MS) * 0.75);
  });

  test('malformed: set aside with the reason, and completed (the Functions Node model cannot dead-letter)', async () => {
    const { primary, setAside, s } = syphon();
    const outcome = await s.restore({
      body: { hello: 1 },
      applicationProperties: { [BACKLOG_PROPERTY.destination]: TOPIC, [BACKLOG_PROPERTY.timeToLive]: 1000 },
      messageId: 'm1',
      deliveryCount: 0,
    });
    assert.equal(outcome.kind, 'rejected');
    assert.equal(primary.sent.length, 0);
    assert.equal(setAside.length, 1);
    assert.equal(setAside[0]?.messageId, 'm1');
    assert.match(setAside[0]?.reason ?? '', /not a WorkDetected event/);
  });
});

describe('settings', () => {
  const base = {
    StorageConnection: 'UseDevelopmentStorage=true',
    ServiceBusConnection: 'Endpoint=sb://localhost:5672;SharedAccessKeyName=k;SharedAccessKey=v',
  };

  test('unset ServiceBusSecondaryConnection: the feature is off and no syphon queue is served', () => {
    assert.equal(loadSettings(base).serviceBusSecondary, undefined);
    assert.deepEqual(syphonQueues(base), []);
  });

  test('a secondary by connection string or identity; the backlog count names the syphon queues; bad values name the setting', () => {
    const env = {
      ...base,
      ServiceBusSecondaryConnection__fullyQualifiedNamespace: 'sb2.servicebus.windows.net',
      PUSHDRAIN_BACKLOG_QUEUE_COUNT: '3',
    };
    const s = loadSettings(env);
    assert.equal(s.serviceBusSecondary?.kind, 'identity');
    assert.equal(s.serviceBusSecondary?.fullyQualifiedNamespace, 'sb2.servicebus.windows.net');
    assert.deepEqual(syphonQueues(env), ['backlog-0', 'backlog-1', 'backlog-2']);
    assert.deepEqual(
      syphonQueues({
        ...base,
        ServiceBusSecondaryConnection: 'Endpoint=sb://localhost:5673;SharedAccessKeyName=k;SharedAccessKey=v',
      }),
      ['backlog-0', 'backlog-1'],
    );
    assert.equal(s.tuning.failoverIntervalMs, 60_000);
    assert.equal(s.tuning.pingIntervalMs, 10_000);
    assert.equal(loadSettings({ ...env, PUSHDRAIN_FAILOVER_INTERVAL_MS: '0' }).tuning.failoverIntervalMs, 0);
    assert.throws(() => loadSettings({ ...env, PUSHDRAIN_BACKLOG_QUEUE_COUNT: '0' }), /PUSHDRAIN_BACKLOG_QUEUE_COUNT/);
    assert.throws(() => syphonQueues({ ...env, PUSHDRAIN_BACKLOG_QUEUE_COUNT: '11' }), /PUSHDRAIN_BACKLOG_QUEUE_COUNT/);
    assert.throws(
      () => loadSettings({ ...base, ServiceBusSecondaryConnection: 'nonsense' }),
      (e: Error) => /ServiceBusSecondaryConnection/.test(e.message) && !e.message.includes('nonsense'),
    );
  });
});
