/**
 * The version rule (shared/model/format-version.ts, docs/DEPLOY.md "Changing a format") on real
 * Azurite queues: a pointer in a newer format than this build reads is handed back for a newer
 * instance, never poisoned, and said once in the log; the handbacks it took do not count toward
 * poison when an instance that reads it gets it; a message nobody reads for MAX_HANDBACKS
 * handbacks goes to poison with that reason. Without the handback record, the same deliveries
 * poison a message: the control that shows the rule is what keeps it.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { Report } from '../../shared/billing/report';
import { encodeResult } from '../../shared/billing/result-blob';
import type { AppParts } from '../../shared/compose/app-parts';
import { MAX_HANDBACKS } from '../../shared/drain/batch-handler';
import { drainOptions } from '../../shared/drain/drain-options';
import { QueueWorker } from '../../shared/drain/queue-worker';
import { NewerFormatError, PermanentError } from '../../shared/errors';
import { parseResultPointer, parseWorkPointer } from '../../shared/model/chunk-codec';
import { FORMATS, readableVersion } from '../../shared/model/format-version';
import { type Logger, type MessageProcessor, type PoisonRecord, systemClock } from '../../shared/ports';
import { handbacksOf } from '../../shared/queue/handbacks';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { expectedReport } from '../../tools/testkit/oracle';
import { completed, post, pump, report } from '../support/invoke';
import { leaseSlots, quietLog, type RawStorage, testRuntime, useStorage } from '../support/storage';

useStorage();

/** A logger that keeps its warnings. */
function keepingLog(): Logger & { warnings: string[] } {
  const warnings: string[] = [];
  return { ...quietLog, warn: (m: string) => void warnings.push(m), warnings };
}

/** One wake-up of a drain of `queue` with `processor`; handed-back messages are visible again in 1 s. */
async function drainOnce(parts: AppParts, queue: string, processor: MessageProcessor, log: Logger) {
  return new QueueWorker({
    queue: parts.queues.queue(queue),
    processor,
    slots: leaseSlots(parts.settings, 1),
    continuation: () => Promise.resolve(),
    clock: systemClock,
    log,
    options: { ...drainOptions(parts.settings.tuning), budgetMs: 20_000, handbackDelaySeconds: 1 },
  }).wake();
}

/** Waits (bounded) until `queue` has a visible message, and returns what a peek shows of it. */
async function visible(raw: RawStorage, queue: string): Promise<{ text: string; dequeueCount: number }> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const m = (await raw.queue(queue).peekMessages()).peekedMessageItems[0];
    if (m) return { text: m.messageText, dequeueCount: m.dequeueCount };
    assert.ok(Date.now() < deadline, `no message became visible on ${queue} in 15 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Receives the one message of `queue` and rewrites its text, visible again at once. */
async function rewrite(raw: RawStorage, queue: string, change: (o: Record<string, unknown>) => object): Promise<void> {
  const got = (await raw.queue(queue).receiveMessages({ numberOfMessages: 1, visibilityTimeout: 30 }))
    .receivedMessageItems[0];
  assert.ok(got, `a message on ${queue}`);
  const text = JSON.stringify(change(JSON.parse(got.messageText) as Record<string, unknown>));
  await raw.queue(queue).updateMessage(got.messageId, got.popReceipt, text, 0);
}

const poisonDepth = async (raw: RawStorage, queue: string): Promise<number> =>
  (await raw.queue(`${queue}-poison`).getProperties()).approximateMessagesCount ?? 0;

describe('the version rule: what a build reads', () => {
  test('its own versions; a newer one that says its `min` is one it reads; a newer one it cannot read is NewerFormatError', () => {
    const f = { name: 'a format', oldest: 1, newest: 2 };
    assert.equal(readableVersion(f, { v: 1 }), 1);
    assert.equal(readableVersion(f, { v: 2 }), 2);
    assert.equal(readableVersion(f, { v: 3, min: 2 }), 2, 'read as its own newest');
    assert.equal(readableVersion(f, { v: 4, min: 1 }), 2);
    assert.throws(() => readableVersion(f, { v: 3 }), NewerFormatError);
    assert.throws(() => readableVersion(f, { v: 3, min: 3 }), NewerFormatError);
    assert.throws(() => readableVersion(f, { v: 3, min: 'x' }), NewerFormatError);
    for (const o of [{}, { v: 0 }, { v: '1' }, { v: 1.5 }])
      assert.throws(() => readableVersion(f, o), PermanentError, JSON.stringify(o));
    assert.throws(
      () => readableVersion({ name: 'x', oldest: 2, newest: 3 }, { v: 1 }),
      PermanentError,
      'older than kept',
    );
  });

  test('the table says what this build writes: a result header of its newest version, readable by the version before', async () => {
    const { headerText } = await encodeResult('b-1', 0, { count: 0, partials: [] }, []);
    const h = JSON.parse(headerText) as { v: number; min: number };
    assert.equal(h.v, FORMATS.resultHeader.newest);
    assert.equal(h.min, FORMATS.resultHeader.newest - 1, 'a reader of the version before reads it');
    assert.equal(readableVersion({ ...FORMATS.resultHeader, newest: h.min }, h), h.min);
  });

  test('pointers: a newer version is NewerFormatError before anything else is judged, and `hb` is only a count', () => {
    for (const parse of [parseWorkPointer, parseResultPointer]) {
      assert.throws(
        () => parse('{"v":2,"something":"new"}'),
        (e: unknown) => e instanceof NewerFormatError && e.version === 2 && e.newest === 1,
      );
      assert.throws(() => parse('{"v":0}'), PermanentError);
    }
    const p = parseResultPointer(
      JSON.stringify({ v: 2, min: 1, batchId: 'b-1', chunk: 3, blob: 'b-1/3', count: 5, hb: 2, more: true }),
    );
    assert.deepEqual([p.batchId, p.chunk, p.count], ['b-1', 3, 5]);
    assert.equal(handbacksOf('{"v":1,"hb":3}'), 3);
    for (const text of ['{"v":1}', '{"hb":-1}', '{"hb":"2"}', 'not json', '[1]'])
      assert.equal(handbacksOf(text), 0, text);
  });
});

describe('the version rule on Azurite: handed back, not poisoned', () => {
  test('a work pointer in a newer format is handed back with a short delay, said once, and keeps its tries for the instance that reads it', async () => {
    const log = keepingLog();
    const { app, parts, events, observer, raw } = await testRuntime({
      PUSHDRAIN_PARTITIONS: '1',
      PUSHDRAIN_CHUNK_SIZE: '1000',
    });
    const max = parts.settings.tuning.maxDequeueCount;
    const txns = generate(200, 54, 20);
    const res = await post(app, toNdjson(txns));
    assert.equal(res.status, 202);
    const { batchId } = res.jsonBody as { batchId: string };
    events.take(); // the drain below is driven by hand
    const queue = parts.names.inputQueue(0);
    // What a newer build would write: version 2, which this build does not read.
    await rewrite(raw, queue, (o) => ({ ...o, v: 2, extra: 'a field this build does not know' }));

    // More handbacks than the poison limit: each wake-up sees the message again and hands it back.
    for (let i = 1; i <= max + 1; i++) {
      await visible(raw, queue);
      const outcome = await drainOnce(parts, queue, parts.map, log);
      assert.equal(outcome.kind, 'drained');
      assert.equal(await poisonDepth(raw, queue), 0, `handback ${i}: nothing in poison`);
      assert.equal((await raw.queue(queue).getProperties()).approximateMessagesCount, 1, 'still queued');
    }
    const seen = await visible(raw, queue);
    assert.equal(handbacksOf(seen.text), max + 1, 'each handback recorded in the message');
    assert.equal(seen.dequeueCount, max + 2, 'Storage counted every receive, the rewrite included');
    assert.equal(
      log.warnings.filter((w) => w.includes('handing such messages back')).length,
      1,
      `said once: ${log.warnings.join(' | ')}`,
    );
    assert.match(log.warnings[0] ?? '', /work pointer version 2 is newer than this instance reads \(up to 1\)/);

    // The instance that reads it: here the same build, given the version it reads, handbacks kept.
    await rewrite(raw, queue, (o) => ({ ...o, v: 1 }));
    assert.ok((await visible(raw, queue)).dequeueCount > max, 'more deliveries than the poison limit');
    await drainOnce(parts, queue, parts.map, log);
    await pump(app, events, () => completed(observer, batchId), 60_000);
    const m = (await app.status(batchId))!;
    assert.equal(m.status, 'completed');
    assert.equal(await poisonDepth(raw, queue), 0, 'the handbacks did not count toward poison');
    const got = (await report(observer, batchId)).jsonBody as Report;
    assert.deepEqual(got.totals, expectedReport(txns).totals);
  });

  test('without the handback record, the same deliveries poison a message (the control)', async () => {
    const { parts, raw } = await testRuntime({ PUSHDRAIN_PARTITIONS: '1' });
    const max = parts.settings.tuning.maxDequeueCount;
    const queue = parts.names.inputQueue(0);
    const processed: string[] = [];
    const proc: MessageProcessor = { process: (m) => (processed.push(m.text), Promise.resolve()) };
    for (const hb of [undefined, max + 1]) {
      await raw.queue(queue).sendMessage(JSON.stringify({ v: 1, ...(hb ? { hb } : {}) }));
      for (let i = 0; i <= max; i++) await rewrite(raw, queue, (o) => o); // a receive that tries nothing
      await drainOnce(parts, queue, proc, quietLog);
    }
    assert.equal(processed.length, 1, 'only the message that recorded its handbacks was processed');
    assert.equal(handbacksOf(processed[0] ?? ''), max + 1);
    const poisoned = (await raw.queue(`${queue}-poison`).peekMessages()).peekedMessageItems;
    assert.equal(poisoned.length, 1);
    const record = JSON.parse(poisoned[0]!.messageText) as PoisonRecord;
    assert.match(record.reason, new RegExp(`dequeued ${max + 2} times \\(max ${max}\\)`));
  });

  test(`a newer message nobody reads goes to poison after ${MAX_HANDBACKS} handbacks, saying why; a redrive starts its count afresh`, async () => {
    const { app, parts, raw } = await testRuntime({ PUSHDRAIN_PARTITIONS: '1' });
    const queue = parts.names.inputQueue(0);
    await raw.queue(queue).sendMessage(JSON.stringify({ v: 7, hb: MAX_HANDBACKS }));
    await drainOnce(parts, queue, parts.map, quietLog);
    const poisoned = (await raw.queue(`${queue}-poison`).peekMessages()).peekedMessageItems;
    assert.equal(poisoned.length, 1);
    assert.match(
      (JSON.parse(poisoned[0]!.messageText) as PoisonRecord).reason,
      new RegExp(`work pointer version 7 is newer .*no instance read it in ${MAX_HANDBACKS} handbacks`),
    );
    const moved = await app.redrive({ queue });
    assert.equal(moved.moved, 1);
    const back = await visible(raw, queue);
    assert.equal(handbacksOf(back.text), 0, 'the redriven message carries no handbacks');
    assert.equal((JSON.parse(back.text) as { v: number }).v, 7, 'and is otherwise as it was');
  });
});
