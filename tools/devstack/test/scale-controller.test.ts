/**
 * The local scale-controller simulator: the documented target-based rule on a fake fleet (unit),
 * and a real fleet of local host processes on one Azurite and one broker that the controller
 * grows from zero under a backlog and shrinks back to zero, with exact reports.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { Report } from '../../../shared/billing/report';
import { loadSettings } from '../../../shared/config/settings';
import { startTestBroker } from '../../../test/support/broker';
import { composedApp } from '../../../test/support/composed-app';
import { post, report } from '../../../test/support/invoke';
import { quietLog, storageDown, storageUp } from '../../../test/support/storage';
import { generate, toNdjson } from '../../testkit/generate';
import { expectedReport } from '../../testkit/oracle';
import { provisionStorage } from '../provision-storage';
import {
  type Decision,
  desiredInstances,
  type Fleet,
  type ManagedInstance,
  type PlatformRule,
  ScaleController,
} from '../scale/controller';
import { runFleet, SUBSCRIPTION_PATHS, targetPerInstance } from '../scale/fleet';
import type { InstanceActivity } from '../scale/instance';
import { instancesOption } from '../scale/serve';

const RULE: PlatformRule = { targetPerInstance: 16, maxStep: 4, minInstances: 0, maxInstances: 20, coolDownMs: 10_000 };

class FakeFleet implements Fleet {
  counts: Record<string, number> = {};
  readonly list: (ManagedInstance & { busy: boolean })[] = [];
  private n = 0;
  activeCounts(): Record<string, number> {
    return this.counts;
  }
  instances(): readonly ManagedInstance[] {
    return this.list;
  }
  add(count: number): Promise<void> {
    for (let i = 0; i < count; i++) {
      const inst = {
        name: `f${++this.n}`,
        busy: true,
        activity: (): Promise<InstanceActivity> =>
          Promise.resolve({
            inProgress: inst.busy ? 1 : 0,
            held: 0,
            processed: { map: 0, reduce: 0 },
            fanOutPublished: 0,
          }),
      };
      this.list.push(inst);
    }
    return Promise.resolve();
  }
  remove(name: string): Promise<void> {
    this.list.splice(
      this.list.findIndex((i) => i.name === name),
      1,
    );
    return Promise.resolve();
  }
}

function actions(ds: readonly Decision[]): string[] {
  return ds
    .filter((d) => d.added || d.removed.length)
    .map((d) => (d.added ? `+${d.added}` : `-${d.removed.join(',')}`));
}

describe('the platform rule', () => {
  test('desired = sum over functions of ceil(active ÷ target), within the bounds', () => {
    assert.equal(desiredInstances({ drain: 0, aggregate: 0 }, RULE), 0);
    assert.equal(desiredInstances({ drain: 1 }, RULE), 1);
    assert.equal(desiredInstances({ drain: 16 }, RULE), 1);
    assert.equal(desiredInstances({ drain: 17 }, RULE), 2);
    assert.equal(desiredInstances({ drain: 64, aggregate: 3, scale: 1 }, RULE), 6);
    assert.equal(desiredInstances({ drain: 10_000 }, RULE), 20);
    assert.equal(desiredInstances({}, { ...RULE, minInstances: 1 }), 1);
    assert.equal(targetPerInstance(), 16, "host.json's maxConcurrentCalls");
  });

  test('adds at most 4 per decision, removes only idle instances after the cool-down, never below the minimum', async () => {
    let now = 0;
    const fleet = new FakeFleet();
    const c = new ScaleController(fleet, { ...RULE, minInstances: 1 }, () => now);
    fleet.counts = { drain: 200 }; // 13 wanted
    for (let i = 0; i < 4; i++) {
      await c.tick();
      now += 1000;
    }
    assert.equal(fleet.list.length, 13);
    assert.deepEqual(actions(c.decisions), ['+4', '+4', '+4', '+1']);
    fleet.counts = { drain: 0 };
    for (const [i, inst] of fleet.list.entries()) inst.busy = i === 5;
    await c.tick(); // first seen idle now
    now += 9_000;
    await c.tick();
    assert.equal(fleet.list.length, 13, 'not before the cool-down');
    now += 1_000;
    await c.tick();
    assert.deepEqual(
      fleet.list.map((i) => i.name),
      ['f1', 'f6', 'f13'],
      'the minimum (the oldest) and the busy one stay, and f13, first seen idle a tick later, waits its own cool-down',
    );
    fleet.list[1]!.busy = false;
    now += 1_000;
    await c.tick();
    now += 10_000;
    await c.tick();
    assert.deepEqual(
      fleet.list.map((i) => i.name),
      ['f1'],
    );
  });

  test('--instances auto or N', () => {
    assert.equal(instancesOption([]), undefined);
    assert.deepEqual(instancesOption(['--instances', 'auto']), { min: 1, max: 8 });
    assert.deepEqual(instancesOption(['--instances=3']), { min: 3, max: 3 });
    assert.throws(() => instancesOption(['--instances', '0']), /--instances/);
    assert.throws(() => instancesOption(['--instances']), /--instances/);
  });
});

describe('a fleet of local instances', () => {
  test('the controller grows the fleet from zero under a backlog, each instance reports its share, and it shrinks back to zero with nothing held', async () => {
    const azurite = await storageUp();
    const bus = await startTestBroker();
    const env = {
      StorageConnection: azurite.connectionString,
      ServiceBusConnection: bus.broker.connectionString,
      PUSHDRAIN_CHUNK_SIZE: '50',
      PUSHDRAIN_MESSAGES_PER_DRAIN: '4',
      PUSHDRAIN_DEQUEUE_BATCH_SIZE: '2',
      PUSHDRAIN_MAX_DEQUEUE_TASKS: '2',
      PUSHDRAIN_MIN_IDLE_MS: '10',
      PUSHDRAIN_MAX_IDLE_MS: '300',
      PUSHDRAIN_SCALE_MODE: 'off',
      PUSHDRAIN_SWEEP_SCHEDULE: '0 0 0 1 1 *',
    };
    await provisionStorage(loadSettings(env)); // what npm start does before it serves
    const { app: http, parts } = composedApp(loadSettings(env), { log: quietLog });
    let fleet: ReturnType<typeof runFleet> | undefined;
    try {
      const txns = generate(5_000, 71, 40);
      const res = await post(http, toNdjson(txns));
      assert.equal(res.status, 202);
      const { batchId } = res.jsonBody as { batchId: string };
      const output: string[] = [];
      fleet = runFleet({
        broker: bus.broker,
        env,
        rule: { ...RULE, maxInstances: 2, coolDownMs: 1_000 },
        intervalMs: 300,
        echo: (line) => void output.push(line),
        log: (line) => void output.push(line),
      });
      const deadline = Date.now() + 120_000;
      let peak = 0;
      for (let i = 0; i < 2_000 && Date.now() < deadline; i++) {
        peak = Math.max(peak, fleet.size());
        if ((await http.status(batchId))?.status === 'completed') break;
        await new Promise((r) => setTimeout(r, 100));
      }
      const got = (await report(http, batchId)).jsonBody as Report;
      const expected = expectedReport(txns);
      assert.deepEqual(got.rows, expected.rows);
      assert.deepEqual(got.totals, expected.totals);
      assert.equal(peak, 2, 'fan-out asked for more than one instance (capped at 2)');
      // Back to zero, with nothing held in any subscription.
      for (let i = 0; i < 600 && Date.now() < deadline; i++) {
        const quiet = Object.values(SUBSCRIPTION_PATHS).every((p) => {
          const c = bus.broker.counts(p);
          return c !== undefined && c.available + c.locked === 0;
        });
        if (fleet.size() === 0 && quiet) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(fleet.size(), 0, 'scaled back to zero');
      const shares = await fleet.stop();
      const input = shares.reduce((a, s) => a + (s.activity?.processed.map ?? 0), 0);
      assert.ok(
        input >= 100,
        `every one of the 100 chunks processed (at least once): ${input} (${shares
          .map((s) => `${s.name}=${s.activity ? s.activity.processed.map : 'no report'}`)
          .join(' ')})\n${output.filter((l) => l.includes('final report')).join('\n')}`,
      );
      assert.ok(
        shares.every((s) => s.exitCode === 0),
        `graceful stops: ${shares.map((s) => `${s.name}=${String(s.exitCode)}`).join(' ')}\n${shares
          .filter((s) => s.exitCode !== 0)
          .map((s) =>
            output
              .filter((l) => l.startsWith(`[${s.name}] `))
              .slice(-40)
              .join('\n'),
          )
          .join('\n')}`,
      );
      const decisions = actions(fleet.decisions);
      assert.match(
        decisions[0] ?? '',
        /^\+[12]$/,
        `from zero on the first events (drain and scale subscriptions): ${decisions.join(' ')}`,
      );
      assert.ok(
        decisions.some((d) => d.startsWith('-')),
        decisions.join(' '),
      );
      for (const d of fleet.decisions) assert.ok(d.added <= 4);
      for (const q of parts.names.allQueues()) assert.equal(await parts.queues.depth(q), 0, `${q} empty`);
      // The batch was in flight as instances came and went: only the first may run start-up
      // recovery (the batch predates it), and nothing re-enqueues work that is still queued.
      const recoveries = output.filter((l) => /Recovery:|recovery woke/.test(l));
      assert.ok(
        recoveries.every((l) => l.startsWith('[i1] ')),
        `only the first instance recovers at start-up:\n${recoveries.join('\n')}`,
      );
      assert.ok(
        recoveries.every((l) => !/re-enqueued [1-9]/.test(l)),
        `no duplicate work:\n${recoveries.join('\n')}`,
      );
    } finally {
      await fleet?.stop();
      await http.close();
      await bus.close();
      await storageDown();
    }
  });
});
