/**
 * Recovery of pending deliveries, against real Azurite (the manifest's ETag writes), with the
 * attempt and the retry scheduling as seams: a delivery not yet due has its retry scheduled again
 * for the same moment under a new key, so the original message (if it was not lost after all) is
 * stale and both firing make one attempt; a due one is attempted at start-up at once, and in a
 * sweep once past the grace (before it, scheduled again at once, or left to an attempt under way).
 * A poisoned callback redriven after its origin left the allowlist ends as gone.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { Manifest } from '../../shared/batch/manifest';
import { ManifestStore } from '../../shared/batch/manifest-store';
import { OpenBatches } from '../../shared/batch/open-batches';
import { type DeliveryRetry, type DeliveryRetryMessage, deliveryRetryMessage } from '../../shared/bus/delivery-retry';
import { eventSettings } from '../../shared/config/event-settings';
import type { Settings } from '../../shared/config/settings';
import { deliveryAttempt } from '../../shared/events/delivery-attempt';
import { redriveDeliveries } from '../../shared/events/delivery-redrive';
import { EventDelivery, type EventDeliveryDeps } from '../../shared/events/event-delivery';
import type { AttemptResult, Delivery, OutboxEvent } from '../../shared/events/outbox';
import { entityNames } from '../../shared/names';
import { AzureQueueStore } from '../../shared/queue/storage-queue';
import { AzureBlobStore } from '../../shared/storage/azure-blob-store';
import { createStorageClients } from '../../shared/storage/clients';
import { StorageMeter } from '../../shared/storage/meter';
import { provisionStorage } from '../../tools/devstack/provision-storage';
import { quietLog, testSettings, useStorage } from '../support/storage';

/** Signs callbacks (no key is derived: one must be set with PUSHDRAIN_CALLBACK_ORIGINS). */
const CALLBACK_KEY = `whsk_${'C'.repeat(43)}=`;

useStorage();

const GRACE_MS = 120_000;
const SCHEDULE = [5, 300];

interface Rig {
  delivery: EventDelivery;
  manifests: ManifestStore;
  attempts: string[];
  scheduled: { check: DeliveryRetryMessage; delayMs: number }[];
  batchId: string;
  eventId: string;
  clock: { now: number };
  open: OpenBatches;
  settings: Settings;
}

async function rig(
  pending: Partial<Delivery>,
  answer: AttemptResult = { status: 200 },
  attemptMs = 20,
  seams: Partial<Pick<EventDeliveryDeps, 'attempt' | 'counted'>> = {},
): Promise<Rig> {
  const settings = testSettings();
  const names = entityNames(settings.namePrefix, settings.tuning.partitions);
  const blobs = new AzureBlobStore(createStorageClients(settings.storage, new StorageMeter()).blobs, names.container);
  await provisionStorage(settings);
  const manifests = new ManifestStore(blobs);
  const open = new OpenBatches(blobs);
  const clock = { now: Date.parse('2026-11-26T12:00:00.000Z') };
  const batchId = `b-${Math.floor(Math.random() * 1e9)}`;
  const eventId = `evt_${batchId}`;
  const completedAt = new Date(clock.now - 60_000).toISOString();
  const event: OutboxEvent = {
    id: eventId,
    type: 'com.pushdrain.batch.completed',
    body: '{}',
    deliveries: [
      {
        kind: 'webhook',
        target: 'http://127.0.0.1:9/h',
        state: 'pending',
        attempts: 0,
        dueAt: completedAt,
        ...pending,
      },
    ],
  };
  const manifest = {
    v: 1,
    batchId,
    state: 'completed',
    source: 'http',
    bodySha256: '0',
    submittedAt: completedAt,
    completedAt,
    transactions: 1,
    chunkSize: 1,
    chunks: 1,
    queues: [],
    notification: 'sent',
    done: [0],
    failed: [],
    events: [event],
  } as unknown as Manifest;
  assert.ok(await manifests.create(manifest));
  await open.add(batchId);
  const attempts: string[] = [];
  const scheduled: Rig['scheduled'] = [];
  const delivery = new EventDelivery({
    manifests,
    open,
    targets: () => [],
    attempt: async (d) => {
      attempts.push(d.target);
      await new Promise((r) => setTimeout(r, attemptMs)); // an attempt takes a while: a second one would overlap
      return answer;
    },
    scheduleRetry: (check, delayMs) => {
      scheduled.push({ check, delayMs });
      return Promise.resolve();
    },
    poison: () => Promise.resolve(),
    ...seams,
    retryScheduleSeconds: SCHEDULE,
    lostAfterMs: GRACE_MS,
    now: () => clock.now,
    log: quietLog,
  });
  return { delivery, manifests, attempts, scheduled, batchId, eventId, clock, open, settings };
}

async function deliveryOf(r: Rig): Promise<Delivery> {
  const d = (await r.manifests.read(r.batchId))?.manifest.events?.[0]?.deliveries[0];
  assert.ok(d);
  return d;
}

describe('recovery of a pending delivery', () => {
  test('not yet due at start-up: its retry is scheduled again for the same moment; the original is then stale', async () => {
    const r = await rig({ attempts: 1, dueAt: new Date(Date.parse('2026-11-26T12:00:00.000Z') + 4_000).toISOString() });
    assert.equal(r.delivery.recover((await r.manifests.read(r.batchId))!.manifest, r.clock.now), 1);
    await r.delivery.idle();
    assert.deepEqual(r.attempts, [], 'nothing attempted before it is due');
    assert.equal(r.scheduled.length, 1, 'its retry scheduled again');
    const { check, delayMs } = r.scheduled[0]!;
    assert.equal(delayMs, 4_000, 'due when it was due: the schedule is not reset');
    const key = check.key;
    assert.ok(key, 'the new message carries a key');
    const stored = await deliveryOf(r);
    assert.equal(stored.retryKey, key, 'the key is on the delivery');
    assert.equal(stored.attempts, 1);

    // Both fire at once (the original was not lost after all): one attempt.
    r.clock.now += 4_000;
    const original: DeliveryRetry = { eventId: r.eventId, index: 0, attempts: 1 };
    const outcomes = await Promise.all([
      r.delivery.retry(deliveryRetryMessage(r.batchId, original)),
      r.delivery.retry(deliveryRetryMessage(r.batchId, check)),
    ]);
    assert.deepEqual(
      outcomes.map((o) => o.kind),
      ['stale', 'delivered'],
    );
    assert.equal(r.attempts.length, 1, 'one attempt for two messages');
    assert.equal((await deliveryOf(r)).state, 'delivered');
    assert.equal(
      (await r.delivery.retry(deliveryRetryMessage(r.batchId, check))).kind,
      'stale',
      'a late copy of it too',
    );
    assert.equal(r.attempts.length, 1);
  });

  test('a second recovery replaces the earlier key: only the newest message attempts', async () => {
    const r = await rig({
      attempts: 2,
      dueAt: new Date(Date.parse('2026-11-26T12:00:00.000Z') + 300_000).toISOString(),
    });
    for (let i = 0; i < 2; i++) {
      r.delivery.recover((await r.manifests.read(r.batchId))!.manifest);
      await r.delivery.idle();
      r.clock.now += 60_000;
    }
    assert.equal(r.scheduled.length, 2);
    assert.deepEqual(
      r.scheduled.map((s) => s.delayMs),
      [300_000, 240_000],
      'each for the same due moment',
    );
    const [first, second] = r.scheduled.map((s) => s.check);
    r.clock.now += 180_000;
    assert.equal((await r.delivery.retry(deliveryRetryMessage(r.batchId, first!))).kind, 'stale');
    assert.equal((await r.delivery.retry(deliveryRetryMessage(r.batchId, second!))).kind, 'delivered');
    assert.equal(r.attempts.length, 1);
  });

  test('due at start-up: attempted at once, and a failure schedules the next step as usual', async () => {
    const r = await rig(
      { attempts: 1, dueAt: new Date(Date.parse('2026-11-26T12:00:00.000Z') - 1_000).toISOString() },
      { status: 503 },
    );
    assert.equal(r.delivery.recover((await r.manifests.read(r.batchId))!.manifest, r.clock.now), 1);
    await r.delivery.idle();
    assert.equal(r.attempts.length, 1);
    assert.equal(r.scheduled.length, 1);
    assert.equal(r.scheduled[0]!.delayMs, 300_000, 'the second wait of the schedule');
    assert.equal(r.scheduled[0]!.check.key, undefined, 'an ordinary retry carries no key');
    const d = await deliveryOf(r);
    assert.equal(d.attempts, 2);
    assert.equal(d.retryKey, undefined, 'the record of an attempt clears the key');
  });

  test('due at start-up: taken under a new key first, so its original message firing meanwhile is stale', async () => {
    const r = await rig(
      { attempts: 1, dueAt: new Date(Date.parse('2026-11-26T12:00:00.000Z') - 1_000).toISOString() },
      { status: 200 },
      1_000,
    );
    r.delivery.recover((await r.manifests.read(r.batchId))!.manifest, r.clock.now);
    for (let i = 0; i < 500 && r.attempts.length === 0; i++) await new Promise((res) => setTimeout(res, 5));
    assert.equal(r.attempts.length, 1, 'the recovery attempt is under way');
    const original: DeliveryRetry = { eventId: r.eventId, index: 0, attempts: 1 };
    assert.equal((await r.delivery.retry(deliveryRetryMessage(r.batchId, original))).kind, 'stale');
    await r.delivery.idle();
    assert.equal(r.attempts.length, 1, 'one attempt');
    assert.equal((await deliveryOf(r)).state, 'delivered');
  });

  test('a sweep: due a moment ago is left to its attempt; longer ago is scheduled again at once; past the grace it is attempted', async () => {
    const base = Date.parse('2026-11-26T12:00:00.000Z');
    const recent = await rig({ attempts: 1, dueAt: new Date(base - 10_000).toISOString() });
    recent.delivery.recover((await recent.manifests.read(recent.batchId))!.manifest);
    await recent.delivery.idle();
    assert.deepEqual([recent.attempts.length, recent.scheduled.length], [0, 0], 'its attempt may be under way');

    const within = await rig({ attempts: 1, dueAt: new Date(base - 60_000).toISOString() });
    within.delivery.recover((await within.manifests.read(within.batchId))!.manifest);
    await within.delivery.idle();
    assert.equal(within.attempts.length, 0, 'a live process may still hold it: not attempted here');
    assert.deepEqual(
      within.scheduled.map((s) => s.delayMs),
      [0],
      'its message was lost or is late: scheduled again at once, under a new key',
    );

    const past = await rig({ attempts: 1, dueAt: new Date(base - GRACE_MS).toISOString() });
    past.delivery.recover((await past.manifests.read(past.batchId))!.manifest);
    await past.delivery.idle();
    assert.equal(past.attempts.length, 1);
    assert.equal((await deliveryOf(past)).state, 'delivered');
  });

  test('redriven after its origin left PUSHDRAIN_CALLBACK_ORIGINS: sends nothing, ends as gone, counted', async () => {
    const target = 'https://billing.example.com/cb?token=t';
    const counted: string[] = [];
    const r = await rig({ kind: 'callback', target, state: 'poisoned', attempts: 4 }, { status: 200 }, 20, {
      // The attempt deliveries make, with the origin removed from the allowlist.
      attempt: deliveryAttempt({
        settings: eventSettings({
          PUSHDRAIN_WEBHOOK_SECRET: `whsec_${'A'.repeat(32)}`,
          PUSHDRAIN_CALLBACK_ORIGINS: 'https://other.example.com',
          PUSHDRAIN_CALLBACK_SIGNING_KEY: CALLBACK_KEY,
        }),
        now: Date.now,
        lookup: () => Promise.reject(new Error('no lookup may happen')),
      }),
      counted: (kind, outcome) => counted.push(`${kind} ${outcome}`),
    });
    const names = entityNames(r.settings.namePrefix, r.settings.tuning.partitions);
    const queues = new AzureQueueStore(
      createStorageClients(r.settings.storage, new StorageMeter()).queues,
      names.poisonQueue,
    );
    await queues.send(names.deliveriesPoisonQueue, {
      kind: 'delivery',
      batchId: r.batchId,
      eventId: r.eventId,
      type: 'com.pushdrain.batch.completed',
      index: 0,
      deliveryKind: 'callback',
      target: 'https://billing.example.com/cb',
      attempts: 4,
      at: new Date(r.clock.now).toISOString(),
    });
    const moved = await redriveDeliveries(
      {
        queues,
        manifests: r.manifests,
        open: r.open,
        events: r.delivery,
        poisonQueue: names.deliveriesPoisonQueue,
        now: () => r.clock.now,
        log: quietLog,
      },
      { max: 10 },
    );
    assert.equal(moved.moved, 1);
    await r.delivery.idle();
    const d = await deliveryOf(r);
    assert.equal(d.state, 'gone');
    assert.match(
      d.lastError ?? '',
      /origin https:\/\/billing\.example\.com is no longer in PUSHDRAIN_CALLBACK_ORIGINS/,
    );
    assert.deepEqual(counted, ['callback gone']);
  });
});
