/**
 * The table of message types (shared/bus/message-types.ts) against what it stands for: each
 * type's entity is one infra/ provisions, with the time to live the table says; each consumer is a
 * function whose trigger takes that entity; every Service Bus trigger but the syphon's takes a
 * type's entity; each builder writes the table's subject and time to live; and a backlog copy of
 * each backlogged type is restored to the message it was.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, test } from 'node:test';

import { batchEventOutgoing } from '../../shared/bus/batch-event';
import { deliveryRetryMessage, deliveryRetryOutgoing } from '../../shared/bus/delivery-retry';
import {
  BACKLOG_DESTINATIONS,
  MESSAGE_TYPES,
  type MessageTypeName,
  messageTypeOf,
  SENT_ENTITIES,
} from '../../shared/bus/message-types';
import type { OutgoingMessage } from '../../shared/bus/outgoing-message';
import { scaleCheckOutgoing } from '../../shared/bus/scale-check';
import { watchdogCheckOutgoing } from '../../shared/bus/watchdog-check';
import { workDetectedOutgoing } from '../../shared/bus/work-detected';
import { fromBacklog, toBacklogMessage } from '../../shared/notify/backlog-message';
import { readRepoFile, repoRoot } from '../support/repo';

/** One message of each type, as its builder makes it. */
const SAMPLES: Record<MessageTypeName, OutgoingMessage> = {
  WorkDetected: workDetectedOutgoing({
    storageAccount: 'devstoreaccount1',
    queueName: 'work-0',
    payloadSize: 10,
    role: 'input',
    batchId: 'b-1',
    traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
  }),
  ScaleCheck: scaleCheckOutgoing(),
  WatchdogCheck: watchdogCheckOutgoing({ v: 1, batchId: 'b-1', attempt: 2, settledBefore: 3 }),
  DeliveryRetry: deliveryRetryOutgoing(deliveryRetryMessage('b-1', { eventId: 'evt_1', index: 0, attempts: 1 })),
  BatchEvent: batchEventOutgoing({
    id: 'evt_1',
    type: 'pushdrain.batch.completed',
    body: JSON.stringify({ id: 'evt_1', type: 'pushdrain.batch.completed', specversion: '1.0', subject: 'b-1' }),
  }),
};

interface Entity {
  name: string;
  defaultMessageTimeToLive?: string;
}

function entities(): Entity[] {
  const json = JSON.parse(readRepoFile('infra/servicebus-entities.json')) as { topics: Entity[]; queues: Entity[] };
  return [...json.topics, ...json.queues];
}

/** An ISO 8601 duration of days, hours, minutes (what the entities' file uses), in ms. */
function durationMs(iso: string): number {
  const m = /^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?)?$/.exec(iso);
  assert.ok(m, `unexpected duration ${iso}`);
  const [d, h, min] = [m[1], m[2], m[3]].map((x) => Number(x ?? 0));
  return ((d! * 24 + h!) * 60 + min!) * 60_000;
}

interface Trigger {
  type: string;
  topicName?: string;
  queueName?: string;
}

function triggers(): { name: string; trigger: Trigger }[] {
  const script = join(repoRoot(), 'dist/tools/devstack/host/print-registrations.js');
  const run = spawnSync(process.execPath, [script], { cwd: repoRoot(), encoding: 'utf8', timeout: 30_000 });
  assert.equal(run.status, 0, `print-registrations failed (run the build first):\n${run.stderr}`);
  return (JSON.parse(run.stdout) as { functions: { name: string; trigger: Trigger }[] }).functions;
}

const NAMES = Object.keys(MESSAGE_TYPES) as MessageTypeName[];

describe('the table of message types', () => {
  test("each type's entity is provisioned, with the table's time to live as its default", () => {
    const provisioned = entities();
    for (const name of NAMES) {
      const t = MESSAGE_TYPES[name];
      const e = provisioned.find((x) => x.name === t.entity);
      assert.ok(e, `${name}: ${t.entity} is not in infra/servicebus-entities.json`);
      assert.ok(e.defaultMessageTimeToLive, `${t.entity} has a default time to live`);
      assert.equal(t.ttlMs, durationMs(e.defaultMessageTimeToLive), `${name}: time to live of ${t.entity}`);
    }
  });

  test("each consumer's trigger takes the type's entity, and every Service Bus trigger but the syphon's takes a type", () => {
    const fns = triggers();
    for (const name of NAMES) {
      const t = MESSAGE_TYPES[name];
      for (const consumer of t.consumers) {
        const f = fns.find((x) => x.name === consumer);
        assert.ok(f, `${name}: no function ${consumer} is registered`);
        assert.equal(f.trigger.topicName ?? f.trigger.queueName, t.entity, `${name}: ${consumer}'s trigger`);
      }
    }
    const serviceBus = fns.filter((f) => f.trigger.type.startsWith('serviceBus') && !f.name.startsWith('syphon-'));
    assert.ok(serviceBus.length >= 4, serviceBus.map((f) => f.name).join(', '));
    for (const f of serviceBus) {
      const entity = f.trigger.topicName ?? f.trigger.queueName;
      assert.ok(
        NAMES.some(
          (n) =>
            MESSAGE_TYPES[n].entity === entity && (MESSAGE_TYPES[n].consumers as readonly string[]).includes(f.name),
        ),
        `${f.name} takes ${entity}: no message type lists it as a consumer`,
      );
    }
  });

  test("each builder writes its type's subject and time to live, and the table finds the type again", () => {
    for (const name of NAMES) {
      const t = MESSAGE_TYPES[name];
      const m = SAMPLES[name];
      if (t.subject !== undefined) assert.equal(m.subject, t.subject, name);
      assert.equal(m.timeToLive, t.ttlMs, name);
      assert.equal(messageTypeOf(t.entity, m.subject), name);
    }
    assert.deepEqual([...SENT_ENTITIES].sort(), [...new Set(NAMES.map((n) => MESSAGE_TYPES[n].entity))].sort());
  });

  test('a backlog copy of each backlogged type is restored to the message it was, properties and all', () => {
    for (const name of NAMES.filter((n) => MESSAGE_TYPES[n].backlog)) {
      const { entity } = MESSAGE_TYPES[name];
      assert.ok(BACKLOG_DESTINATIONS.includes(entity), name);
      const original = SAMPLES[name];
      const copy = toBacklogMessage(entity, original, undefined, 0);
      const restored = fromBacklog({
        body: copy.body,
        applicationProperties: copy.applicationProperties,
        ...(copy.messageId ? { messageId: copy.messageId } : {}),
        deliveryCount: 0,
      });
      if (typeof restored === 'string') assert.fail(`${name}: ${restored}`);
      assert.equal(restored.destination, entity);
      assert.deepEqual(restored.message, original, name);
    }
  });
});
