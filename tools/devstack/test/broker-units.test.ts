/**
 * The development broker's pure parts: config parsing and validation, lock-token byte order,
 * correlation filters, timers, stats, fault switches, the CLI port setting, and start/stop.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';

import { matchesFilter } from '../servicebus/amqp-message';
import { startBroker } from '../servicebus/broker';
import {
  findEntitiesFile,
  loadEntitiesConfig,
  parseDuration,
  storeSettings,
  validateEntities,
} from '../servicebus/config';
import { normalizePath } from '../servicebus/entities';
import { FaultState } from '../servicebus/faults';
import { lockTokenFromTag, lockTokenFromUuid, newLockToken, uuidBytes } from '../servicebus/lock-token';
import { portFromEnv } from '../servicebus/main';
import { Stats } from '../servicebus/stats';
import { Timers } from '../servicebus/timers';

describe('development broker: config', () => {
  test('parses ISO-8601 durations to milliseconds', () => {
    assert.equal(parseDuration('PT5M', 'x'), 300_000);
    assert.equal(parseDuration('PT1S', 'x'), 1000);
    assert.equal(parseDuration('PT0.3S', 'x'), 300);
    assert.equal(parseDuration('PT1H30M', 'x'), 5_400_000);
    assert.equal(parseDuration('P1DT2H', 'x'), 93_600_000);
    for (const bad of ['P', 'PT', '5M', 'PT5X', '']) {
      assert.throws(() => parseDuration(bad, 'queues[0].lockDuration'), /queues\[0\]\.lockDuration/);
    }
  });

  test('rejects bad entities with a message naming the field', () => {
    const sub = { name: 's', filter: null };
    assert.throws(() => validateEntities({ queues: [{ name: 'a' }, { name: 'A' }] }), /queues\[1\].*duplicate/);
    assert.throws(
      () => validateEntities({ queues: [{ name: 'a', maxDeliveryCount: 0 }] }),
      /queues\[0\]\.maxDeliveryCount/,
    );
    assert.throws(() => validateEntities({ queues: [{ name: 'a', lockDuration: 'PT0.01S' }] }), /lockDuration/);
    assert.throws(
      () => validateEntities({ topics: [{ name: 't', subscriptions: [{ ...sub, filter: { role: ['x'] } }] }] }),
      /topics\[0\]\.subscriptions\[0\]\.filter\.role/,
    );
    assert.throws(
      () => validateEntities({ topics: [{ name: 't', subscriptions: [sub, sub] }] }),
      /duplicate subscription/,
    );
    assert.throws(() => validateEntities({ queues: [{ name: 'bad name' }] }), /queues\[0\]\.name/);
    assert.throws(() => validateEntities([]), /expected an object/);
  });

  test('applies defaults, and a topic TTL caps its subscriptions', () => {
    assert.deepEqual(storeSettings({ name: 'q' }, 'q'), {
      lockDurationMs: 60_000,
      maxDeliveryCount: 10,
      deadLetterOnExpiration: false,
      ttlMs: Infinity,
    });
    assert.equal(storeSettings({ name: 's', defaultMessageTimeToLive: 'PT10M' }, 's', 'PT1H').ttlMs, 600_000);
    assert.equal(storeSettings({ name: 's', defaultMessageTimeToLive: 'PT2H' }, 's', 'PT1H').ttlMs, 3_600_000);
  });

  test('finds infra/servicebus-entities.json by walking up, and loads the repo copy by default', () => {
    const root = mkdtempSync(join(tmpdir(), 'broker-config-'));
    try {
      mkdirSync(join(root, 'infra'));
      writeFileSync(join(root, 'infra', 'servicebus-entities.json'), JSON.stringify({ queues: [{ name: 'q1' }] }));
      const deep = join(root, 'dist', 'tools', 'devstack', 'servicebus');
      mkdirSync(deep, { recursive: true });
      const found = findEntitiesFile(deep);
      assert.equal(found, join(root, 'infra', 'servicebus-entities.json'));
      assert.deepEqual(
        loadEntitiesConfig(found).queues?.map((q) => q.name),
        ['q1'],
      );
      assert.throws(() => findEntitiesFile(tmpdir()), /Cannot find/);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
    assert.ok(loadEntitiesConfig().topics?.some((t) => t.name === 'work-detected'));
  });

  test('normalises addresses: scheme, host, slashes and case', () => {
    assert.equal(
      normalizePath('sb://localhost:5672/Work-Detected/Subscriptions/Drain/'),
      'work-detected/subscriptions/drain',
    );
    assert.equal(normalizePath('/q/$DeadLetterQueue'), 'q/$deadletterqueue');
  });
});

describe('development broker: building blocks', () => {
  test('lock tokens: the delivery tag is the uuid in .NET GUID byte order', () => {
    const id = '00112233-4455-6677-8899-aabbccddeeff';
    const tag = Buffer.from('33221100554477668899aabbccddeeff', 'hex');
    assert.equal(lockTokenFromTag(tag), id);
    assert.equal(lockTokenFromUuid(uuidBytes(id)), id);
    const t = newLockToken();
    assert.equal(lockTokenFromTag(t.tag), t.id);
    assert.equal(lockTokenFromTag(Buffer.from('short')), undefined);
  });

  test('correlation filters match application properties exactly; null matches all', () => {
    const input = { body: 1, application_properties: { role: 'input' } };
    assert.equal(matchesFilter(null, { body: 1 }), true);
    assert.equal(matchesFilter({ role: 'input' }, input), true);
    assert.equal(matchesFilter({ role: 'output' }, input), false);
    assert.equal(matchesFilter({ role: 'input' }, { body: 1 }), false);
  });

  test('timers fire, cancel, and stop clears every pending one', async () => {
    const timers = new Timers();
    const fired: string[] = [];
    timers.after(5, () => fired.push('a'));
    const b = timers.after(5, () => fired.push('b'));
    timers.cancel(b);
    timers.after(60_000, () => fired.push('late'));
    await new Promise((r) => setTimeout(r, 30));
    assert.deepEqual(fired, ['a']);
    assert.equal(timers.active, 1);
    timers.stop();
    assert.equal(timers.active, 0);
    assert.equal(
      timers.after(1, () => fired.push('after stop')),
      undefined,
    );
  });

  test('stats are zero-filled, count, and reset', () => {
    const stats = new Stats();
    assert.equal(stats.snapshot().send, 0);
    stats.inc('send');
    stats.inc('management:peek-message', 2);
    assert.equal(stats.snapshot().send, 1);
    assert.equal(stats.snapshot()['management:peek-message'], 2);
    stats.reset();
    assert.equal(stats.snapshot().send, 0);
    assert.equal(stats.snapshot()['management:peek-message'], undefined);
  });

  test('fault switches validate and count down', () => {
    const f = new FaultState();
    f.setServerBusy(2);
    assert.deepEqual([f.takeServerBusy(), f.takeServerBusy(), f.takeServerBusy()], [true, true, false]);
    assert.throws(() => f.setServerBusy(-1), RangeError);
    assert.throws(() => f.setLatency(Number.NaN), RangeError);
    f.setLatency(50);
    f.reset();
    assert.equal(f.latencyMs, 0);
  });

  test('the CLI reads SERVICEBUS_PORT, default 5672', () => {
    assert.equal(portFromEnv(undefined), 5672);
    assert.equal(portFromEnv('5673'), 5673);
    assert.throws(() => portFromEnv('http'), /SERVICEBUS_PORT/);
  });

  test('start and stop: a free port, an emulator connection string, idempotent stop that closes the port', async () => {
    const broker = await startBroker({ entities: { queues: [{ name: 'q' }] } });
    assert.ok(broker.port > 0);
    assert.equal(
      broker.connectionString,
      `Endpoint=sb://localhost:${broker.port};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true;`,
    );
    await Promise.all([broker.stop(), broker.stop()]);
    await broker.stop();
    const refused = await new Promise<boolean>((resolve) => {
      const s = connect({ port: broker.port, host: '127.0.0.1' });
      s.once('connect', () => {
        s.destroy();
        resolve(false);
      });
      s.once('error', () => resolve(true));
    });
    assert.equal(refused, true, 'nothing listens after stop');
    await assert.rejects(startBroker({ entities: { queues: [{ name: 'q', lockDuration: 'soon' }] } }), /lockDuration/);
  });
});
