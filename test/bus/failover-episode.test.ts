/**
 * A whole outage episode, as `npm start` runs it: the local host as a child process with both
 * connections (so the syphon functions are registered and fed by the host's Service Bus
 * triggers), Azurite, and two development brokers. Batches go in over HTTP before, during and
 * after a short and a long outage of the primary; every one completes with the exact report.
 * The primary carries two audit subscriptions with the drain and aggregate filters copied from
 * infra/servicebus-entities.json, so the test sees where the filters routed every event.
 * Now and then the SDK takes about a minute to recover from the dropped connections (a send that
 * waits out its try timeouts, or the host's receivers stuck before they reconnect); the waits allow
 * for it, and the diagnostics show it.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import type { ServiceBusReceivedMessage } from '@azure/service-bus';
import { BlobServiceClient } from '@azure/storage-blob';

import { SUBSCRIPTIONS, TOPIC, WATCHDOG_QUEUE } from '../../shared/names';
import { BACKLOG_PROPERTY } from '../../shared/notify/backlog-message';
import type { PublisherHealth } from '../../shared/notify/failover-state';
import { type Azurite, startAzurite } from '../../tools/devstack/azurite';
import { loadEntitiesConfig } from '../../tools/devstack/servicebus/config';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { expectedReport } from '../../tools/testkit/oracle';
import { receiveExactly } from '../support/broker';
import { type HostProcess, startHostProcess } from '../support/host-process';
import { type PairedBrokers, startPairedBrokers } from '../support/paired-brokers';
import { uniquePrefix } from '../support/storage';

const PREFIX = uniquePrefix();
const INTERVAL_MS = 1500;
const PING_MS = 300;
const SLA_SECONDS = 10;
const AUDIT = { input: 'audit-drain', output: 'audit-aggregate' } as const;

let azurite: Azurite;
let pair: PairedBrokers;
let host: HostProcess;

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let i = 0; Date.now() < deadline && i < 10_000; i++) {
    const v = await probe();
    if (v !== undefined) return v;
    await pause(100);
  }
  throw new Error(
    `timed out after ${timeoutMs} ms waiting for ${what}\n--- host output ---\n${host.output().slice(-4000)}`,
  );
}

/** The primary's entities as infra/ provisions them, plus audit copies of the drain and aggregate subscriptions. */
function primaryEntities(): ReturnType<typeof loadEntitiesConfig> {
  const config = loadEntitiesConfig();
  for (const topic of config.topics ?? []) {
    if (topic.name !== TOPIC) continue;
    const copy = (name: string, as: string) => ({ ...topic.subscriptions.find((s) => s.name === name)!, name: as });
    topic.subscriptions.push(
      copy(SUBSCRIPTIONS.drain.name, AUDIT.input),
      copy(SUBSCRIPTIONS.aggregate.name, AUDIT.output),
    );
  }
  return config;
}

before(async () => {
  [azurite, pair] = await Promise.all([startAzurite(), startPairedBrokers({ primaryEntities: primaryEntities() })]);
  host = await startHostProcess({
    StorageConnection: azurite.connectionString,
    ...pair.env({ failoverIntervalMs: INTERVAL_MS, pingIntervalMs: PING_MS }),
    PUSHDRAIN_NAME_PREFIX: PREFIX,
    PUSHDRAIN_CHUNK_SIZE: '400',
    PUSHDRAIN_MAX_IDLE_MS: '1000',
    PUSHDRAIN_WATCHDOG_SLA_SECONDS: String(SLA_SECONDS),
    // Re-publishes the notifications left pending while the primary was down.
    PUSHDRAIN_SWEEP_SCHEDULE: '*/2 * * * * *',
  });
});

after(async () => {
  if (host) assert.equal(await host.stop(), 0, `the host stops cleanly:\n${host.output().slice(-2000)}`);
  await pair?.close();
  await azurite?.stop();
});

async function health(): Promise<{ status: string; serviceBus?: PublisherHealth }> {
  return (await (await fetch(`${host.base}/api/health`)).json()) as { status: string; serviceBus?: PublisherHealth };
}
const stateOf = async (entity: string): Promise<string | undefined> =>
  (await health()).serviceBus?.entities[entity]?.state;

interface Submitted {
  batchId: string;
  txns: ReturnType<typeof generate>;
}

async function submit(seed: number, count: number): Promise<Submitted> {
  const txns = generate(count, seed, 40);
  const res = await fetch(`${host.base}/api/batches`, {
    method: 'POST',
    body: toNdjson(txns),
    headers: { 'Content-Type': 'application/x-ndjson' },
  });
  assert.equal(res.status, 202, `ingest answers 202 (${await res.clone().text()})`);
  return { batchId: ((await res.json()) as { batchId: string }).batchId, txns };
}

async function completedWithExactReport(b: Submitted): Promise<void> {
  await until(`batch ${b.batchId} completed`, 90_000, async () => {
    const s = (await (await fetch(`${host.base}/api/batches/${b.batchId}`)).json()) as { status: string };
    assert.notEqual(s.status, 'failed', `batch ${b.batchId} failed`);
    return s.status === 'completed' ? true : undefined;
  });
  const report = (await (await fetch(`${host.base}/api/batches/${b.batchId}/report`)).json()) as {
    rows: unknown[];
    totals: unknown[];
    transactions: number;
  };
  const expected = expectedReport(b.txns);
  assert.equal(report.transactions, b.txns.length);
  assert.deepEqual(report.rows, expected.rows);
  assert.deepEqual(report.totals, expected.totals);
}

const secondaryIn = (): number => pair.secondary.broker.stats().messagesIn;

/** `[ISO] watchdog: watchdog <batchId> #1: …` lines of the host, by batch. */
function watchdogRuns(): Map<string, number> {
  const runs = new Map<string, number>();
  for (const m of host.output().matchAll(/^\[([^\]]+)\] watchdog: watchdog (\S+) #1:/gm))
    if (!runs.has(m[2]!)) runs.set(m[2]!, Date.parse(m[1]!));
  return runs;
}

test('batches across a whole outage episode complete with exact reports; the backlog drains back through the filters', async (t) => {
  // 1. Healthy: nothing reaches the secondary.
  const a = await submit(1, 900);
  await completedWithExactReport(a);
  assert.equal(secondaryIn(), 0, 'healthy: nothing reaches the secondary');

  // 2. An outage shorter than the failover interval: the notification waits for the sweep, nothing goes to the backlog.
  pair.primary.broker.faults.outage(true);
  await pause(200);
  const b = await submit(2, 700);
  await pause(300);
  pair.primary.broker.faults.outage(false);
  await completedWithExactReport(b);
  assert.equal(secondaryIn(), 0, 'a short outage puts nothing in the backlog');

  // 3. An outage longer than the interval: both entities fail over; ingest keeps answering 202.
  pair.primary.broker.faults.outage(true);
  const outageStarted = Date.now();
  await pause(200);
  const c = await submit(3, 800);
  await pause(INTERVAL_MS + 100);
  const d = await submit(4, 500);
  const firstInBacklog = await until('the first backlog message', 10_000, () =>
    Promise.resolve(secondaryIn() > 0 ? Date.now() : undefined),
  );
  await until('work-detected failed over', 20_000, async () =>
    (await stateOf(TOPIC)) === 'failedOver' ? true : undefined,
  );
  const f = await submit(5, 600);
  // F's wake-ups go to the backlog at once; its watchdog check follows once batch-watchdog has
  // failed over too (directly, or when the sweep re-sends F's pending notification). C's and D's
  // may never be parked: a drain still running when the outage began can finish them first.
  const parked = await until("F's watchdog check in the backlog", 20_000, async () => {
    const all = [...(await pair.backlog()).values()].flat();
    return all.some(
      (m) =>
        m.applicationProperties?.[BACKLOG_PROPERTY.destination] === WATCHDOG_QUEUE && m.messageId === `${f.batchId}:1`,
    )
      ? all
      : undefined;
  });
  assert.equal(await stateOf(WATCHDOG_QUEUE), 'failedOver');
  const during = await health();
  assert.equal(during.status, 'degraded', JSON.stringify(during));
  for (const m of parked.filter((x) => x.applicationProperties?.[BACKLOG_PROPERTY.destination] === TOPIC)) {
    const body = m.body as { role: string; queueName: string };
    assert.equal(m.applicationProperties?.role, body.role, 'routing properties travel with each event');
    assert.equal(m.applicationProperties?.queueName, body.queueName);
  }
  await until('the syphon to abandon while the primary is down', 10_000, () =>
    Promise.resolve(pair.secondary.broker.stats().abandon > 0 ? true : undefined),
  );
  assert.equal(pair.secondary.broker.stats().complete, 0, 'nothing is completed before the primary accepted it');

  // 4. Recovery: the ping brings sends back; the syphon drains the backlog to zero.
  const scheduledBefore = pair.primary.broker.stats()['management:schedule-message'] ?? 0;
  pair.primary.broker.faults.outage(false);
  const recovered = Date.now();
  await until('both entities back on the primary', 20_000, async () =>
    (await stateOf(TOPIC)) === 'healthy' && (await stateOf(WATCHDOG_QUEUE)) === 'healthy' ? true : undefined,
  );
  const returnedMs = Date.now() - recovered;
  const moved = pair.secondary.broker.stats().messagesIn;
  await until('the backlog drained to zero', 30_000, async () =>
    [...(await pair.backlog()).values()].every((q) => q.length === 0) ? true : undefined,
  );
  const drainedMs = Date.now() - recovered;
  assert.equal(
    pair.secondary.broker.stats().complete,
    moved,
    'every backlog message was completed once, after the primary took it',
  );

  const inBefore = secondaryIn();
  const e = await submit(6, 500);
  for (const x of [c, d, f, e]) await completedWithExactReport(x);
  assert.equal(secondaryIn(), inBefore, 'after recovery new sends go to the primary');

  // 5. The filters routed every restored event that is due: drain copies only input, aggregate copies only output.
  const events = parked.filter((m) => m.applicationProperties?.[BACKLOG_PROPERTY.destination] === TOPIC);
  const dueAt = (m: ServiceBusReceivedMessage): number =>
    Date.parse(String(m.applicationProperties?.[BACKLOG_PROPERTY.scheduledEnqueueTime] ?? '1970-01-01T00:00:00Z'));
  const auditAt = Date.now();
  // A continuation can be due a minute from now (a drain that found every slot held): it is scheduled on the primary.
  const due = new Set(events.filter((m) => dueAt(m) <= auditAt - 200).map((m) => String(m.messageId)));
  const ahead = events.filter((m) => dueAt(m) > auditAt).length;
  const audit = async (role: 'input' | 'output'): Promise<ServiceBusReceivedMessage[]> => {
    const receiver = pair.primary.client().createReceiver(TOPIC, AUDIT[role], { receiveMode: 'receiveAndDelete' });
    try {
      const got: ServiceBusReceivedMessage[] = [];
      for (let i = 0; i < 50; i++) {
        const page = await receiveExactly(receiver, 100, 500);
        got.push(...page);
        if (page.length === 0) break;
      }
      return got;
    } finally {
      await receiver.close();
    }
  };
  const [inputs, outputs] = [await audit('input'), await audit('output')];
  for (const [role, got] of [
    ['input', inputs],
    ['output', outputs],
  ] as const) {
    assert.ok(got.length > 0, `${role} events reached their subscription`);
    for (const m of got) {
      assert.equal((m.body as { role: string }).role, role, `only ${role} events in the ${role} subscription`);
      assert.equal(m.applicationProperties?.role, role);
    }
  }
  const routed = new Set([...inputs, ...outputs].map((m) => String(m.messageId)));
  assert.ok(due.size > 0, 'parked events are due by now');
  assert.deepEqual(
    [...due].filter((id) => !routed.has(id)),
    [],
    'every restored event that is due reached the subscription its role selects',
  );

  // 6. Watchdog checks that waited in the backlog were restored as scheduled messages and fire at their original time.
  const checks = [
    ...host
      .output()
      .matchAll(/syphon-backlog-\d+: backlog message (\S+) restored to batch-watchdog, scheduled for (\S+)/g),
  ].map((m) => ({
    batchId: m[1]!.split(':')[0]!,
    at: Date.parse(m[2]!),
  }));
  assert.ok(
    checks.some((ch) => ch.batchId === f.batchId),
    `F's check was restored as a scheduled message:\n${host.output().slice(-3000)}`,
  );
  const scheduled = (pair.primary.broker.stats()['management:schedule-message'] ?? 0) - scheduledBefore;
  assert.ok(
    scheduled >= checks.length + ahead,
    `the syphon scheduled what was still ahead (${checks.length} checks, ${ahead} continuations; ${scheduled} schedules)`,
  );
  const runs = await until('the restored watchdog checks to fire', 90_000, () => {
    const r = watchdogRuns();
    return Promise.resolve(checks.every((ch) => r.has(ch.batchId)) ? r : undefined);
  });
  const lateness = checks.map((ch) => runs.get(ch.batchId)! - ch.at);
  // The host log has millisecond timestamps; a check never fires before its time.
  for (const [i, late] of lateness.entries())
    assert.ok(late >= -5, `check of ${checks[i]!.batchId} fired ${-late} ms before its time`);

  // 7. A malformed backlog message is set aside with its reason and completed; the backlog stays at zero.
  const sender = pair.secondary.client().createSender(pair.backlogQueues[0]!);
  await sender.sendMessages({
    body: { hello: 'world' },
    messageId: 'malformed-1',
    applicationProperties: { [BACKLOG_PROPERTY.destination]: TOPIC, [BACKLOG_PROPERTY.timeToLive]: 60_000 },
  });
  await sender.close();
  const blobs = BlobServiceClient.fromConnectionString(azurite.connectionString).getContainerClient(
    `${PREFIX}rejected`,
  );
  const record = await until('the malformed message set aside', 20_000, async () => {
    const blob = blobs.getBlobClient('backlog/malformed-1.json');
    return (await blob.exists())
      ? (JSON.parse((await blob.downloadToBuffer()).toString('utf8')) as { reason: string; body: unknown })
      : undefined;
  });
  assert.match(record.reason, /not a WorkDetected event/);
  assert.deepEqual(record.body, { hello: 'world' });
  await until('the backlog at zero again', 10_000, async () =>
    [...(await pair.backlog()).values()].every((q) => q.length === 0) ? true : undefined,
  );

  t.diagnostic(
    `failover: first event in the backlog ${firstInBacklog - outageStarted} ms after the outage began (interval ${INTERVAL_MS} ms)`,
  );
  t.diagnostic(`return: both entities back on the primary ${returnedMs} ms after it recovered (ping ${PING_MS} ms)`);
  t.diagnostic(`syphon: ${moved} backlog messages drained ${drainedMs} ms after the primary recovered`);
  t.diagnostic(
    `watchdog checks restored as scheduled messages fired ${lateness.map((l) => `${l} ms`).join(', ')} after their original time`,
  );
});
