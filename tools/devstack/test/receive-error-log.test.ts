/**
 * Service Bus receive errors in the local host's log during an outage: one line when the errors
 * begin, a summary per interval while they go on, one line when they stop. The rule with a
 * manual clock and ticker; then the real path: the host's Service Bus triggers (official SDK)
 * against the development broker, whose outage switch refuses every connection.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { SUBSCRIPTIONS, TOPIC } from '../../../shared/names';
import { useBroker } from '../../../test/support/broker';
import { waitFor } from '../../../test/support/poll';
import { repoRoot } from '../../../test/support/repo';
import { serviceBusOptions } from '../host/host-json';
import { ReceiveErrorLog } from '../host/receive-error-log';
import type { Registration } from '../host/registry';
import { startServiceBusTriggers } from '../host/service-bus-triggers';

interface Line {
  level: string;
  message: string;
}

function manualLog() {
  const lines: Line[] = [];
  let t = 0;
  let tick: (() => void) | undefined;
  const log = new ReceiveErrorLog({
    connection: 'ServiceBusConnection',
    warn: (message) => void lines.push({ level: 'warning', message }),
    info: (message) => void lines.push({ level: 'information', message }),
    now: () => t,
    summaryEveryMs: 30_000,
    every: (_ms, fn) => {
      tick = fn;
      return () => (tick = undefined);
    },
  });
  /** Moves time to the next summary and runs it. */
  const interval = (): void => {
    t += 30_000;
    tick?.();
  };
  return { log, lines, interval, ticking: () => tick !== undefined };
}

describe('the receive-error log rule', () => {
  test('the first error as it is, then one summary per interval with the count, then one line when an interval passes without an error', () => {
    const { log, lines, interval, ticking } = manualLog();
    assert.equal(ticking(), false, 'healthy: no timer');
    for (let i = 0; i < 412; i++)
      log.error(
        i % 2 ? 'work-detected/Subscriptions/drain' : 'work-detected/Subscriptions/scale',
        'connect ECONNREFUSED 127.0.0.1:5672',
      );
    assert.equal(lines.length, 1);
    assert.match(
      lines[0]!.message,
      /^ServiceBusConnection: Service Bus receive error on work-detected\/Subscriptions\/scale: connect ECONNREFUSED/,
    );
    interval();
    assert.equal(lines.length, 2);
    assert.match(
      lines[1]!.message,
      /still failing to receive: 411 errors in the last 30 s on .*scale.*drain|still failing to receive: 411 errors in the last 30 s on .*drain.*scale/,
    );
    for (let i = 0; i < 5; i++) log.error('batch-watchdog', 'connect ECONNREFUSED 127.0.0.1:5672');
    interval();
    assert.match(lines[2]!.message, /5 errors in the last 30 s on batch-watchdog;/);
    interval();
    assert.deepEqual(lines[3], {
      level: 'information',
      message: 'ServiceBusConnection: Service Bus receives again (no error for 30 s); 417 receive errors in 90 s',
    });
    assert.equal(ticking(), false, 'healthy again: the timer is gone');
    assert.equal(lines.length, 4);
  });

  test('a new error after the quiet line starts a new episode; close() stops the timer', () => {
    const { log, lines, interval, ticking } = manualLog();
    log.error('q', 'boom');
    interval();
    assert.match(lines[1]!.message, /receives again \(no error for 30 s\); 1 receive errors in 30 s/);
    log.error('q', 'again');
    assert.equal(lines.length, 3);
    assert.match(lines[2]!.message, /receive error on q: again/);
    log.close();
    assert.equal(ticking(), false);
  });
});

describe('the local host during a broker outage (real SDK, development broker)', () => {
  const bus = useBroker();

  test('receive errors: one line when the outage begins, a summary per interval, one line once they stop, however many the SDK reports', async (t) => {
    const lines: Line[] = [];
    const received: string[] = [];
    const functions: Registration[] = Object.values(SUBSCRIPTIONS).map(({ name }) => ({
      name,
      bindings: {
        message: {
          type: 'serviceBusTrigger',
          direction: 'in',
          name: 'message',
          topicName: TOPIC,
          subscriptionName: name,
          connection: 'ServiceBusConnection',
        },
      },
      handler: () => void received.push(name),
    }));
    const summaryMs = 1000;
    // host.json's settings with quick SDK retries (the quicker it retries, the more errors it reports) and a short summary interval.
    const options = {
      ...serviceBusOptions(repoRoot()),
      retry: { maxRetries: 3, retryDelayInMs: 50, maxRetryDelayInMs: 200, timeoutInMs: 2000 },
      receiveErrorSummaryMs: summaryMs,
    };
    const host = startServiceBusTriggers(
      functions,
      { ServiceBusConnection: bus.broker.connectionString },
      options,
      (level, _fn, message) => void lines.push({ level, message }),
    );
    const sender = bus.client().createSender(TOPIC);
    const busLines = (): Line[] => lines.filter((l) => /Service Bus/.test(l.message));
    const show = (): string =>
      busLines()
        .map((l) => l.message)
        .join('\n');
    try {
      await sender.sendMessages({ body: { probe: 1 }, applicationProperties: { role: 'input' } });
      assert.ok(await waitFor(() => received.includes('scale'), 10_000), 'the receivers are up');

      bus.broker.faults.outage(true);
      assert.ok(await waitFor(() => busLines().length > 0, 10_000), 'the outage is logged');
      const windowMs = 3500;
      const first = Date.now();
      await new Promise((r) => setTimeout(r, windowMs)); // the window the log rate is measured over, not a wait for a condition
      const elapsed = Date.now() - first;
      const during = busLines();
      assert.match(
        during[0]!.message,
        /^ServiceBusConnection: Service Bus receive error on work-detected\/Subscriptions\//,
      );
      const summaries = during.slice(1);
      assert.ok(summaries.length >= 1, `a summary per ${summaryMs} ms:\n${show()}`);
      assert.ok(
        during.length <= 2 + Math.ceil(elapsed / summaryMs),
        `at most the first line and one summary per interval in ${elapsed} ms:\n${show()}`,
      );
      for (const l of summaries) assert.match(l.message, /still failing to receive: \d+ errors in the last 1 s on /);
      const reported = 1 + summaries.reduce((n, l) => n + Number(/(\d+) errors in the last/.exec(l.message)?.[1]), 0);

      bus.broker.faults.outage(false);
      assert.ok(
        await waitFor(() => busLines().some((l) => /receives again/.test(l.message)), 20_000),
        `one line once the errors stop:\n${show()}`,
      );
      const ended = busLines().find((l) => /receives again/.test(l.message))!;
      assert.equal(ended.level, 'information');
      t.diagnostic(
        `${elapsed} ms of outage: the SDK reported ${reported} receive errors; the log has ${during.length} lines for them (${Math.round((during.length * 1000) / elapsed)} lines/s instead of ${Math.round((reported * 1000) / elapsed)})`,
      );
    } finally {
      await sender.close();
      await host.close();
    }
  });
});
