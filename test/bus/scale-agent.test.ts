/**
 * The scaling agent through the real @azure/arm-appservice client, against a local HTTPS
 * endpoint that records every request, with its decision record in real Azurite (ETag) and a
 * fake clock: exact requests for both plans, the rule's boundaries, hysteresis, dry-run,
 * no write when nothing changed, 429 and 403, two racing agents, and the idle return to zero.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import type { ServiceBusReceiver } from '@azure/service-bus';

import { onScaleSignal } from '../../functions/scale-agent';
import { scaleCheckOutgoing } from '../../shared/bus/scale-check';
import { floorFor, parseScaleRules } from '../../shared/config/scale-rules';
import { FLEX_MIN_MAX_INSTANCES, loadSettings } from '../../shared/config/settings';
import { createApp } from '../../shared/create-app';
import { ConfigError } from '../../shared/errors';
import { layout } from '../../shared/layout';
import { SUBSCRIPTIONS, TOPIC } from '../../shared/names';
import { ServiceBusPublisher } from '../../shared/notify/service-bus-publisher';
import type { Clock } from '../../shared/ports';
import type { ScaleOutcome } from '../../shared/scale/agent';
import { createArmScaleTarget } from '../../shared/scale/arm-target';
import type { ScaleTarget } from '../../shared/scale/target';
import { meterDelta } from '../../shared/storage/meter';
import { rng } from '../../tools/testkit/generate';
import { type ArmEndpoint, fakeCredential, flexSite, startArmEndpoint } from '../support/arm-endpoint';
import { startTestBroker } from '../support/broker';
import { CapturingPublisher } from '../support/capturing-publisher';
import { FLEX_LIMITS } from '../support/flex-deprecations';
import { context } from '../support/invoke';
import { type TestRuntime, testRuntime, useStorage } from '../support/storage';

useStorage();

let arm: ArmEndpoint;
before(async () => {
  arm = await startArmEndpoint();
});
after(async () => {
  await arm.close();
});

const SUB = '00000000-0000-0000-0000-000000000001';
const SITE_PATH = `/subscriptions/${SUB}/resourceGroups/rg-test/providers/Microsoft.Web/sites/func-test`;
const API = '?api-version=2025-05-01';
const SITE_ENV = {
  PUSHDRAIN_SCALE_SUBSCRIPTION_ID: SUB,
  PUSHDRAIN_SCALE_RESOURCE_GROUP: 'rg-test',
  PUSHDRAIN_SCALE_SITE_NAME: 'func-test',
};
/** Small depths for the tests: 5 queued → 1 ready, 20 → 2, 50 → 4. */
const RULES = '5:1,20:2,50:4';

class FakeClock implements Clock {
  t = Date.UTC(2026, 0, 1);
  now = (): number => this.t;
  sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, Math.min(ms, 5)));
  random = rng(7);
  advance(seconds: number): void {
    this.t += seconds * 1000;
  }
}

/** A logger that keeps what it was told. */
class RecordingLog {
  readonly lines = { info: [] as string[], warn: [] as string[], error: [] as string[] };
  info = (m: string): void => void this.lines.info.push(m);
  warn = (m: string): void => void this.lines.warn.push(m);
  error = (m: string): void => void this.lines.error.push(m);
}

interface AgentRig extends TestRuntime {
  clock: FakeClock;
  log: RecordingLog;
  target: ScaleTarget;
  checks: number[];
  /** Sets the depth of input queue 0 to n messages (the others stay empty). */
  depth(n: number): Promise<void>;
  signal(): Promise<ScaleOutcome>;
}

async function rig(env: Record<string, string> = {}): Promise<AgentRig> {
  const all: Record<string, string> = {
    PUSHDRAIN_PARTITIONS: '2',
    PUSHDRAIN_SCALE_RULES: RULES,
    PUSHDRAIN_SCALE_MODE: 'apply',
    ...SITE_ENV,
    ...env,
  };
  const scale = loadSettings({ StorageConnection: 'UseDevelopmentStorage=true', ...all }).scale;
  const clock = new FakeClock();
  const log = new RecordingLog();
  const scaleTarget = createArmScaleTarget(scale, scale.site!, 'drain', {
    credential: fakeCredential,
    endpoint: arm.url,
    tlsOptions: { ca: arm.ca },
  });
  const runtime = await testRuntime(all, { scaleTarget, clock, log });
  const queue = runtime.raw.queue(runtime.parts.names.inputQueue(0));
  arm.site = flexSite(Number(all.PUSHDRAIN_SCALE_MAX_INSTANCES ?? 100));
  arm.webConfig = {
    minimumElasticInstanceCount: 1,
    functionAppScaleLimit: Number(all.PUSHDRAIN_SCALE_MAX_INSTANCES ?? 100),
    numberOfWorkers: 1,
  };
  arm.faults = [];
  arm.take();
  return {
    ...runtime,
    clock,
    log,
    target: scaleTarget,
    checks: runtime.events.scaleChecks,
    depth: async (n) => {
      await queue.clearMessages();
      for (let i = 0; i < n; i++) await queue.sendMessage(`m${i}`);
    },
    signal: () => runtime.app.scale({ kind: 'work', queue: runtime.parts.names.inputQueue(0), payloadSize: 1234 }),
  };
}

function calls(outcome: ScaleOutcome | undefined): string {
  if (!outcome) return 'ignored';
  return outcome.kind === 'evaluated'
    ? `${outcome.call}:${outcome.decision.floor}/${outcome.decision.ceiling}`
    : outcome.kind;
}

describe('the rule table', () => {
  test('boundaries of the default table, and the bounds', () => {
    const rules = parseScaleRules('PUSHDRAIN_SCALE_RULES', '512:1,4096:2,16384:4,65536:8');
    const at = [0, 511, 512, 4095, 4096, 16383, 16384, 65535, 65536, 10_000_000];
    assert.deepEqual(
      at.map((d) => floorFor(d, rules, 0, 100)),
      [0, 0, 1, 1, 2, 2, 4, 4, 8, 8],
    );
    assert.deepEqual(
      at.map((d) => floorFor(d, rules, 1, 3)),
      [1, 1, 1, 1, 2, 2, 3, 3, 3, 3],
    );
    assert.equal(loadSettings({ StorageConnection: 'UseDevelopmentStorage=true' }).scale.rules.length, 4);
  });

  test('a bad table or bound is refused at start-up, naming the setting', () => {
    const bad = ['512:1,512:2', '512:2,4096:1', '0:1', 'x:1', '512'];
    for (const raw of bad)
      assert.throws(
        () => parseScaleRules('PUSHDRAIN_SCALE_RULES', raw),
        (e: unknown) => e instanceof ConfigError && e.setting === 'PUSHDRAIN_SCALE_RULES',
        raw,
      );
    const base = { StorageConnection: 'UseDevelopmentStorage=true' };
    assert.throws(
      () => loadSettings({ ...base, PUSHDRAIN_SCALE_MIN_INSTANCES: '5', PUSHDRAIN_SCALE_MAX_INSTANCES: '4' }),
      /PUSHDRAIN_SCALE_MIN_INSTANCES/,
    );
    assert.throws(
      () => loadSettings({ ...base, PUSHDRAIN_SCALE_MAX_INSTANCES: '39' }),
      (e: unknown) =>
        e instanceof ConfigError &&
        e.setting === 'PUSHDRAIN_SCALE_MAX_INSTANCES' &&
        /at least 40 on Flex Consumption/.test(e.message),
      "below Flex's lowest ceiling",
    );
    assert.equal(FLEX_MIN_MAX_INSTANCES, FLEX_LIMITS.maximumInstanceCount.min, "Flex's documented floor");
    assert.equal(loadSettings({ ...base, PUSHDRAIN_SCALE_MAX_INSTANCES: '40' }).scale.maxInstances, 40);
    assert.equal(
      loadSettings({ ...base, PUSHDRAIN_SCALE_PLAN: 'premium', PUSHDRAIN_SCALE_MAX_INSTANCES: '1' }).scale.maxInstances,
      1,
      'Elastic Premium has no such floor',
    );
    assert.throws(
      () => loadSettings({ ...base, PUSHDRAIN_SCALE_MODE: 'apply' }),
      /apply needs PUSHDRAIN_SCALE_SUBSCRIPTION_ID/,
    );
    assert.throws(() => loadSettings({ ...base, PUSHDRAIN_SCALE_MODE: 'yes' }), /PUSHDRAIN_SCALE_MODE/);
    assert.throws(
      () => loadSettings({ ...base, ...SITE_ENV, PUSHDRAIN_SCALE_SITE_NAME: '../x' }),
      /PUSHDRAIN_SCALE_SITE_NAME/,
    );
    assert.equal(loadSettings(base).scale.mode, 'dry-run', 'dry-run by default');
  });
});

describe('the scaling agent against the management API', () => {
  test('Flex Consumption: reads the site, then one PATCH with function:drain and maximumInstanceCount, other entries kept', async () => {
    const r = await rig();
    await r.depth(6);
    assert.equal(calls(await r.signal()), 'written:1/100');
    const sent = arm.take();
    assert.deepEqual(
      sent.map((q) => `${q.method} ${q.path}`),
      [`GET ${SITE_PATH}${API}`, `PATCH ${SITE_PATH}${API}`],
    );
    assert.ok(
      sent.every((q) => q.authorization === 'Bearer test-token'),
      'the client authenticates every request',
    );
    const expected = flexSite(100) as { properties: { functionAppConfig: Record<string, unknown> } };
    const config = expected.properties.functionAppConfig;
    assert.deepEqual(sent[1]!.body, {
      properties: {
        functionAppConfig: {
          ...config,
          scaleAndConcurrency: {
            alwaysReady: [
              { name: 'http', instanceCount: 1 },
              { name: 'function:drain', instanceCount: 1 },
            ],
            maximumInstanceCount: 100,
            instanceMemoryMB: 2048,
          },
        },
      },
    });
  });

  test('Elastic Premium: reads config/web, then one PATCH of minimumElasticInstanceCount and functionAppScaleLimit', async () => {
    const r = await rig({ PUSHDRAIN_SCALE_PLAN: 'premium', PUSHDRAIN_SCALE_MAX_INSTANCES: '20' });
    await r.depth(25);
    assert.equal(calls(await r.signal()), 'written:2/20');
    const sent = arm.take();
    assert.deepEqual(
      sent.map((q) => `${q.method} ${q.path}`),
      [`GET ${SITE_PATH}/config/web${API}`, `PATCH ${SITE_PATH}/config/web${API}`],
    );
    assert.deepEqual(sent[1]!.body, { properties: { minimumElasticInstanceCount: 2, functionAppScaleLimit: 20 } });
    // Back to idle: Premium never goes below its one instance.
    r.clock.advance(901 + 30);
    await r.depth(0);
    assert.equal(calls(await r.app.scale({ kind: 'check' })), 'written:0/20');
    assert.deepEqual(arm.take()[1]!.body, {
      properties: { minimumElasticInstanceCount: 1, functionAppScaleLimit: 20 },
    });
  });

  test('dry-run (the default) logs the exact request and makes no call', async () => {
    const r = await rig({ PUSHDRAIN_SCALE_MODE: 'dry-run' });
    await r.depth(6);
    assert.equal(calls(await r.signal()), 'logged:1/100');
    assert.deepEqual(arm.take(), [], 'no request reached the management endpoint');
    const line = r.log.lines.info.find((l) => l.includes('would send'));
    assert.ok(line, r.log.lines.info.join('\n'));
    assert.ok(
      line.includes(
        `PATCH ${arm.url}${SITE_PATH}${API} {"properties":{"functionAppConfig":{"scaleAndConcurrency":{"alwaysReady":[{"name":"function:drain","instanceCount":1}],"maximumInstanceCount":100}}}}`,
      ),
      line,
    );
  });

  test('no write when nothing changed: the same decision again, and a site that already matches', async () => {
    const r = await rig();
    await r.depth(6);
    assert.equal(calls(await r.signal()), 'written:1/100');
    arm.take();
    r.clock.advance(31);
    assert.equal(calls(await r.signal()), 'none:1/100');
    assert.deepEqual(arm.take(), [], 'the same decision: no call at all');
    // A fresh record (another deployment's agent set it already): one read, no PATCH.
    await r.parts.blobs.remove(layout.scaleState());
    r.clock.advance(31);
    const again = await r.signal();
    assert.equal(calls(again), 'unchanged:1/100');
    assert.deepEqual(
      arm.take().map((q) => q.method),
      ['GET'],
    );
  });

  test('hysteresis under a fake clock: one sample per interval, up after 60 s, down only after 900 s without load', async () => {
    const r = await rig();
    await r.depth(6);
    assert.equal(calls(await r.signal()), 'written:1/100');
    const reads = r.app.storageTransactions().total;
    r.clock.advance(10);
    assert.equal(calls(await r.signal()), 'not-due', 'inside the interval');
    assert.equal(r.app.storageTransactions().total, reads, 'and without a Storage request');
    await r.depth(25);
    r.clock.advance(25); // 35 s after the raise: past the interval, inside the up cooldown
    assert.equal(calls(await r.signal()), 'none:1/100');
    r.clock.advance(30); // 65 s: up
    assert.equal(calls(await r.signal()), 'written:2/100');
    await r.depth(0);
    for (let i = 0; i < 29; i++) {
      r.clock.advance(30); // up to 870 s after the last sample that wanted 2
      assert.equal(calls(await r.signal()), 'none:2/100', `step ${i}`);
    }
    r.clock.advance(31); // 901 s
    assert.equal(calls(await r.signal()), 'written:0/100');
    const writes = arm.take().filter((q) => q.method === 'PATCH').length;
    assert.equal(writes, 3, 'one write per change');
  });

  test('429 honours Retry-After: no call before it, a scheduled check right after, then the write', async () => {
    const r = await rig();
    await r.depth(6);
    arm.faults = [{ status: 429, headers: { 'retry-after': '120' }, method: 'PATCH' }];
    assert.equal(calls(await r.signal()), 'throttled:1/100');
    assert.deepEqual(
      arm.take().map((q) => q.method),
      ['GET', 'PATCH'],
    );
    assert.ok(r.checks.includes(121_000), `a check one second after Retry-After (${r.checks.join(', ')})`);
    r.clock.advance(60);
    assert.equal(calls(await r.signal()), 'not-due');
    assert.deepEqual(arm.take(), [], 'nothing sent before Retry-After');
    r.clock.advance(61);
    assert.equal(calls(await r.app.scale({ kind: 'check' })), 'written:1/100');
    assert.deepEqual(
      arm.take().map((q) => q.method),
      ['GET', 'PATCH'],
    );
  });

  test('403 disables the agent with one clear error, turns health red, and stops every agent calling', async () => {
    const r = await rig();
    await r.depth(6);
    arm.faults = [{ status: 403, method: 'PATCH' }];
    assert.equal(calls(await r.signal()), 'forbidden:1/100');
    assert.equal(r.log.lines.error.length, 1);
    assert.match(r.log.lines.error[0]!, /403 Forbidden.*scaling agent's role/);
    const health = r.app.health();
    assert.equal(health.status, 'degraded');
    assert.equal(health.scaleAgent.status, 'red');
    assert.match(health.scaleAgent.message ?? '', /disabled/);
    arm.take();
    r.clock.advance(3600);
    assert.equal(calls(await r.signal()), 'disabled');
    // Another instance's agent reads the record and stops too.
    const other = createApp(r.parts.settings, {
      publisher: new CapturingPublisher(),
      clock: r.clock,
      log: r.log,
      scaleTarget: r.target,
    });
    try {
      assert.equal(calls(await other.scale({ kind: 'work', queue: 'x', payloadSize: 0 })), 'disabled');
      assert.equal(other.health().scaleAgent.status, 'red');
    } finally {
      await other.close();
    }
    assert.deepEqual(arm.take(), []);
    assert.equal(r.log.lines.error.length, 1, 'one error, not one per event');
  });

  test('a due evaluation at the minimum with nothing to change: the claim and the sample, no read and no second write', async () => {
    const r = await rig();
    await r.depth(0);
    assert.equal(calls(await r.signal()), 'unchanged:0/100');
    arm.take();
    const before = r.app.storageTransactions();
    r.clock.advance(31);
    assert.equal(calls(await r.signal()), 'none:0/100');
    // The record is the one this process wrote: claimed with its ETag, one write; the sample is one request per input queue.
    assert.deepEqual(meterDelta(r.app.storageTransactions(), before), {
      'blob.put': 1,
      'queue.metadata': 2,
      total: 3,
    });
    // Another agent's write since: the claim fails, the record is read, and the evaluation goes on from it.
    const stored = await r.observerParts.blobs.read(layout.scaleState());
    assert.ok(stored);
    await r.observerParts.blobs.write(layout.scaleState(), stored.body, { contentType: 'application/json' });
    r.clock.advance(31);
    const again = r.app.storageTransactions();
    assert.equal(calls(await r.signal()), 'none:0/100');
    assert.deepEqual(meterDelta(r.app.storageTransactions(), again), {
      'blob.get': 1,
      'blob.put': 2,
      'queue.metadata': 2,
      total: 5,
    });
    assert.deepEqual(arm.take(), [], 'no management call');
  });

  test('two racing agents: one samples, one decides, one write (ETag on the record in Azurite)', async () => {
    const r = await rig();
    await r.depth(6);
    const other = createApp(r.parts.settings, {
      publisher: new CapturingPublisher(),
      clock: r.clock,
      log: r.log,
      scaleTarget: r.target,
    });
    try {
      const outcomes = await Promise.all([r.signal(), other.scale({ kind: 'work', queue: 'x', payloadSize: 0 })]);
      // The loser either loses the If-Match race or, arriving a moment later, finds the winner's
      // claim and is not due: both are one decision. What must hold is one write and one sample.
      const [loser, winner] = outcomes.map(calls).sort();
      assert.equal(winner, 'written:1/100');
      assert.ok(loser === 'lost-race' || loser === 'not-due', `the other agent stood down (${loser})`);
      assert.deepEqual(
        arm.take().map((q) => q.method),
        ['GET', 'PATCH'],
      );
      const depthReads = (app: typeof other): number => app.storageTransactions()['queue.metadata'] ?? 0;
      assert.equal(
        depthReads(r.app) + depthReads(other),
        2,
        'one depth sample: one request per input queue, by one agent',
      );
    } finally {
      await other.close();
    }
  });

  test('idle: the floor returns to zero after the down cooldown through the scheduled check, then nothing is scheduled or called', async () => {
    const r = await rig();
    await r.depth(6);
    assert.equal(calls(await r.signal()), 'written:1/100');
    assert.deepEqual(r.checks, [930_000], 'one check, after the down cooldown and an interval');
    await r.depth(0);
    r.clock.advance(930);
    assert.equal(
      calls(await onScaleSignal(r.app, JSON.stringify({ v: 1, kind: 'ScaleCheck' }), context('scaleAgent'))),
      'written:0/100',
    );
    assert.deepEqual(r.checks, [930_000], 'back at the minimum: no further check');
    arm.take();
    const storage = r.app.storageTransactions().total ?? 0;
    // An idle hour: no event arrives, so no invocation runs; an agent woken anyway (a stray event) does one sample and no call.
    r.clock.advance(3600);
    assert.equal(calls(await r.signal()), 'none:0/100');
    assert.deepEqual(arm.take(), []);
    assert.ok(
      (r.app.storageTransactions().total ?? 0) - storage <= 5,
      'one record read, one claim, one sample of 2 queues, one record write',
    );
    assert.deepEqual(r.checks, [930_000]);
  });
});

describe('the scale check on Service Bus', () => {
  test('a scheduled check reaches the scale subscription only', async () => {
    const harness = await startTestBroker();
    const receivers: ServiceBusReceiver[] = [];
    try {
      const publisher = new ServiceBusPublisher(harness.client());
      await publisher.schedule(TOPIC, [scaleCheckOutgoing()], 50);
      const client = harness.client();
      const receive = async (sub: string, waitMs: number): Promise<unknown[]> => {
        const rx = client.createReceiver(TOPIC, sub);
        receivers.push(rx);
        return (await rx.receiveMessages(5, { maxWaitTimeInMs: waitMs })).map((m) => m.body as unknown);
      };
      assert.deepEqual(await receive(SUBSCRIPTIONS.scale.name, 3000), [{ v: 1, kind: 'ScaleCheck' }]);
      assert.deepEqual(await receive(SUBSCRIPTIONS.drain.name, 200), []);
      assert.deepEqual(await receive(SUBSCRIPTIONS.aggregate.name, 200), []);
      await publisher.close();
    } finally {
      for (const rx of receivers) await rx.close();
      await harness.close();
    }
  });
});
