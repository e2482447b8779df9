/**
 * The deliveries part of the status report, as logic (the stack test, delivery-operations, shows it
 * on the real thing): bounded reads, pending vs retrying, and what a `Batches.Read` caller may see of
 * a target and an error.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { Manifest } from '../../../shared/batch/manifest';
import type { VersionedManifest } from '../../../shared/batch/manifest-store';
import type { Delivery } from '../../../shared/events/outbox';
import type { PeekedMessage } from '../../../shared/ports';
import { originOf, redactError } from '../../../shared/redaction';
import { DeliveryStatusReader, MAX_BATCHES } from '../../../shared/status/delivery-status';

function manifest(batchId: string, deliveries: Delivery[]): VersionedManifest {
  const events = [{ id: `evt_${batchId}`, type: 'com.pushdrain.batch.completed', body: '{}', deliveries }];
  return { manifest: { batchId, events } as unknown as Manifest, etag: '"1"' };
}

const delivery = (over: Partial<Delivery>): Delivery => ({
  kind: 'webhook',
  target: 'https://hooks.example.com/in',
  state: 'pending',
  attempts: 0,
  dueAt: '2026-11-25T10:00:00.000Z',
  ...over,
});

describe('DeliveryStatusReader', () => {
  test('reads at most MAX_BATCHES manifests, counts the rest, and never peeks an empty poison queue', async () => {
    const reads: string[] = [];
    const peeks: string[] = [];
    const reader = new DeliveryStatusReader({
      manifests: {
        read: (id: string) => {
          reads.push(id);
          return Promise.resolve(manifest(id, [delivery({}), delivery({ state: 'delivered', attempts: 1 })]));
        },
      },
      queues: { depth: () => Promise.resolve(0), peek: (q) => (peeks.push(q), Promise.resolve([])) },
      poisonQueue: 'p-deliveries-poison',
      now: () => Date.parse('2026-11-25T10:00:00Z'),
    });
    const ids = Array.from({ length: 14 }, (_, i) => `b-${i}`);
    const s = await reader.read({ batchIds: ids, total: 40 });
    assert.deepEqual(reads, ids.slice(0, MAX_BATCHES));
    assert.equal(s.moreBatches, 40 - MAX_BATCHES);
    assert.equal(s.pending, MAX_BATCHES, 'settled deliveries are not listed');
    assert.equal(s.retrying, 0);
    assert.deepEqual(peeks, []);
    assert.deepEqual(s.poisoned, { queue: 'p-deliveries-poison', depth: 0, oldestAgeSeconds: null, shown: [] });
  });

  test('retrying first, with attempts, next attempt and last answer; a callback by its origin only', async () => {
    const poison: PeekedMessage = {
      id: 'm1',
      insertedOn: Date.parse('2026-11-25T09:58:00Z'),
      dequeueCount: 0,
      text: JSON.stringify({
        kind: 'delivery',
        batchId: 'b-2',
        eventId: 'evt_2',
        type: 'com.pushdrain.batch.failed',
        index: 0,
        deliveryKind: 'callback',
        target: 'https://client.example.com/private/path',
        attempts: 8,
        lastError: 'refused: https://client.example.com/x?token=abc resolves to 10.0.0.1',
        at: '2026-11-25T09:58:00.000Z',
      }),
    };
    const reader = new DeliveryStatusReader({
      manifests: {
        read: () =>
          Promise.resolve(
            manifest('b-1', [
              delivery({}),
              delivery({
                kind: 'callback',
                target: 'https://client.example.com/cb?sig=s3cret',
                attempts: 2,
                dueAt: '2026-11-25T10:05:00.000Z',
                lastStatus: 503,
              }),
            ]),
          ),
      },
      queues: {
        depth: () => Promise.resolve(3),
        peek: () => Promise.resolve([poison, { ...poison, id: 'm2', text: 'not json' }]),
      },
      poisonQueue: 'deliveries-poison',
      now: () => Date.parse('2026-11-25T10:00:00Z'),
    });
    const s = await reader.read({ batchIds: ['b-1'], total: 1 });
    assert.deepEqual(
      s.shown.map((l) => [l.state, l.kind, l.target, l.attempts, l.nextAttemptAt, l.lastStatus]),
      [
        ['retrying', 'callback', 'https://client.example.com', 2, '2026-11-25T10:05:00.000Z', 503],
        ['pending', 'webhook', 'https://hooks.example.com', 0, '2026-11-25T10:00:00.000Z', undefined],
      ],
    );
    assert.deepEqual([s.pending, s.retrying], [1, 1]);
    assert.equal(s.poisoned.depth, 3);
    assert.equal(s.poisoned.oldestAgeSeconds, 120);
    assert.equal(s.poisoned.shown.length, 1, 'an unreadable record is left out');
    assert.equal(s.poisoned.shown[0]?.target, 'https://client.example.com');
    assert.equal(s.poisoned.shown[0]?.lastError, 'refused: https://client.example.com resolves to 10.0.0.1');
    const text = JSON.stringify(s);
    for (const hidden of ['s3cret', 'token=abc', '/cb', '/private/path']) assert.ok(!text.includes(hidden), hidden);
  });

  test('redaction: origins, masked keys, short', () => {
    assert.equal(originOf('batch-events'), 'batch-events');
    assert.equal(originOf('https://a.example:8443/x?y=1'), 'https://a.example:8443');
    assert.equal(
      redactError('Endpoint=sb://x/;SharedAccessKey=abc; url https://h.example/p?code=k. whsec_AAAA'),
      'Endpoint=sb://x/;SharedAccessKey=***; url https://h.example whsec_***',
    );
    assert.equal(redactError('x'.repeat(500)).length, 200);
  });
});
