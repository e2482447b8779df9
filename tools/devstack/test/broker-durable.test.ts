/**
 * The development broker with a data folder, stopped and started again in process, through the
 * official SDK: what a restart must keep (messages and their properties, subscription copies,
 * sequence numbers, scheduled, deferred and dead-lettered messages, settlements), locks held
 * at the stop released as expired locks are, compaction, and recovery from a torn journal tail.
 * (SIGKILL of a broker process: broker-crash.test.ts.)
 */
import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';

import type { ServiceBusReceivedMessage } from '@azure/service-bus';

import { type BrokerHarness, queue, receiveExactly, startTestBroker } from '../../../test/support/broker';
import type { EntitiesConfig } from '../servicebus/config';
import { encodeOps, frameRecord } from '../servicebus/journal-codec';
import { MAX_DELIVERY_REASON } from '../servicebus/message-store';

const ENTITIES: EntitiesConfig = {
  queues: [
    queue('q', { lockDuration: 'PT30S' }),
    queue('retry', { lockDuration: 'PT30S', maxDeliveryCount: 2 }),
    queue('later'),
    queue('settle', { lockDuration: 'PT30S' }),
    queue('bulk'),
  ],
  topics: [
    {
      name: 'fan',
      subscriptions: [
        { name: 'a', filter: { role: 'a' }, lockDuration: 'PT30S' },
        { name: 'all', filter: null, lockDuration: 'PT30S' },
      ],
    },
  ],
};
const NO_AUTO_RENEW = { maxAutoLockRenewalDurationInMs: 0 };

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function dataDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'sb-durable-'));
  dirs.push(d);
  return d;
}

interface Opened {
  h: BrokerHarness;
  notices: string[];
}

async function open(dir: string, compactAtBytes?: number): Promise<Opened> {
  const notices: string[] = [];
  const h = await startTestBroker({ entities: ENTITIES, dataDir: dir, compactAtBytes, notice: (l) => notices.push(l) });
  return { h, notices };
}

function segmentFile(dir: string): string {
  const names = readdirSync(dir).filter((f) => /^journal-\d+\.log$/.test(f));
  assert.equal(names.length, 1, `one live segment (${names.join(', ')})`);
  return join(dir, names[0]!);
}

const seqOf = (m: ServiceBusReceivedMessage): number => Number(m.sequenceNumber?.toString());

describe('development broker: durable across restarts', () => {
  test('messages, their properties and every subscription copy survive; completed ones stay completed; numbering continues', async () => {
    const dir = dataDir();
    let { h } = await open(dir);
    const c = h.client();
    await c.createSender('q').sendMessages([
      {
        body: { n: 1 },
        messageId: 'm-1',
        correlationId: 'c-1',
        subject: 'subj',
        contentType: 'application/json',
        applicationProperties: { k: 'v', n: 7 },
        timeToLive: 3_600_000,
      },
      { body: 'two', messageId: 'm-2' },
      { body: Buffer.from([1, 2, 3]), messageId: 'm-3' },
    ]);
    await c.createSender('fan').sendMessages([
      { body: 'for a and all', applicationProperties: { role: 'a' } },
      { body: 'for all only', applicationProperties: { role: 'b' } },
    ]);
    const r = c.createReceiver('q', NO_AUTO_RENEW);
    const [first] = await receiveExactly(r, 1);
    assert.equal(first?.messageId, 'm-1');
    await r.completeMessage(first);
    const seqBefore = Math.max(seqOf(first), 3);
    await h.close();

    ({ h } = await open(dir));
    const c2 = h.client();
    const got = await receiveExactly(c2.createReceiver('q', { receiveMode: 'receiveAndDelete' }), 3, 3000);
    assert.deepEqual(
      got.map((m) => m.messageId),
      ['m-2', 'm-3'],
      'the completed message is gone, the others are back in order',
    );
    assert.deepEqual(got[1]?.body, Buffer.from([1, 2, 3]));
    await c2.createSender('q').sendMessages({ body: 'after', messageId: 'm-4' });
    const [after4] = await receiveExactly(c2.createReceiver('q', NO_AUTO_RENEW), 1);
    assert.ok(seqOf(after4!) > seqBefore, `sequence numbers keep increasing (${seqOf(after4!)} > ${seqBefore})`);
    const a = await receiveExactly(c2.createReceiver('fan', 'a', { receiveMode: 'receiveAndDelete' }), 2, 2000);
    const all = await receiveExactly(c2.createReceiver('fan', 'all', { receiveMode: 'receiveAndDelete' }), 2, 3000);
    assert.deepEqual(
      a.map((m) => m.body as unknown),
      ['for a and all'],
    );
    assert.deepEqual(
      all.map((m) => m.body as unknown),
      ['for a and all', 'for all only'],
    );
    await h.close();
  });

  test('properties are kept exactly', async () => {
    const dir = dataDir();
    let { h } = await open(dir);
    await h
      .client()
      .createSender('q')
      .sendMessages({
        body: { n: 1, s: 'x' },
        messageId: 'p-1',
        correlationId: 'c-1',
        subject: 'subj',
        contentType: 'application/json',
        applicationProperties: { k: 'v', n: 7, b: true },
        timeToLive: 3_600_000,
      });
    await h.close();
    ({ h } = await open(dir));
    const [m] = await receiveExactly(h.client().createReceiver('q', { receiveMode: 'receiveAndDelete' }), 1);
    assert.ok(m);
    assert.deepEqual(
      {
        body: m.body,
        id: m.messageId,
        corr: m.correlationId,
        subject: m.subject,
        type: m.contentType,
        props: m.applicationProperties,
        ttl: m.timeToLive,
      },
      {
        body: { n: 1, s: 'x' },
        id: 'p-1',
        corr: 'c-1',
        subject: 'subj',
        type: 'application/json',
        props: { k: 'v', n: 7, b: true },
        ttl: 3_600_000,
      },
    );
    await h.close();
  });

  test('a lock held at the stop is released at start-up with its delivery counted; past maxDeliveryCount it is dead-lettered', async () => {
    const dir = dataDir();
    let o = await open(dir);
    await o.h.client().createSender('retry').sendMessages({ body: 'hot potato', messageId: 'hp' });
    const [held] = await receiveExactly(o.h.client().createReceiver('retry', NO_AUTO_RENEW), 1);
    assert.equal(held?.deliveryCount, 0);
    await o.h.close(); // the lock (30 s) is still held

    o = await open(dir);
    assert.ok(
      o.notices.some((l) => /1 locks? held at the last stop released and counted/.test(l)),
      o.notices.join('\n'),
    );
    const [again] = await receiveExactly(o.h.client().createReceiver('retry', NO_AUTO_RENEW), 1);
    assert.equal(again?.messageId, 'hp');
    assert.equal(again?.deliveryCount, 1, 'the interrupted delivery counts');
    await o.h.close();

    o = await open(dir);
    const none = await o.h.client().createReceiver('retry', NO_AUTO_RENEW).receiveMessages(1, { maxWaitTimeInMs: 500 });
    assert.equal(none.length, 0, 'maxDeliveryCount 2 reached: no longer in the queue');
    const [dead] = await receiveExactly(
      o.h.client().createReceiver('retry', { subQueueType: 'deadLetter', receiveMode: 'receiveAndDelete' }),
      1,
    );
    assert.equal(dead?.messageId, 'hp');
    assert.equal(dead?.deadLetterReason, MAX_DELIVERY_REASON);
    assert.equal(dead?.deliveryCount, 2);
    await o.h.close();
  });

  test('a scheduled message fires at its time after a restart; a cancelled one stays cancelled', async () => {
    const dir = dataDir();
    let { h } = await open(dir);
    const at = new Date(Date.now() + 2_500);
    const sender = h.client().createSender('later');
    const [keep] = await sender.scheduleMessages({ body: 'on time', messageId: 'keep' }, at);
    const [cancel] = await sender.scheduleMessages({ body: 'cancelled', messageId: 'cancel' }, at);
    await sender.cancelScheduledMessages(cancel!);
    await h.close();

    ({ h } = await open(dir));
    const r = h.client().createReceiver('later', { receiveMode: 'receiveAndDelete' });
    const got = await receiveExactly(r, 1, 8_000);
    const receivedAt = Date.now();
    assert.equal(got[0]?.messageId, 'keep');
    assert.equal(seqOf(got[0]), Number(keep!.toString()), 'the sequence number given at scheduling');
    assert.ok(receivedAt >= at.getTime() - 50, `not before its time (${at.getTime() - receivedAt} ms early)`);
    const extra = await r.receiveMessages(1, { maxWaitTimeInMs: 1000 });
    assert.equal(extra.length, 0, 'the cancelled message did not come back');
    await h.close();
  });

  test('dead letters, deferred messages and abandon-with-properties survive', async () => {
    const dir = dataDir();
    let { h } = await open(dir);
    await h
      .client()
      .createSender('settle')
      .sendMessages([
        { body: 'dead', messageId: 'dead' },
        { body: 'defer', messageId: 'defer' },
        { body: 'abandon', messageId: 'abandon' },
      ]);
    const r = h.client().createReceiver('settle', NO_AUTO_RENEW);
    const ms = await receiveExactly(r, 3);
    const by = (id: string): ServiceBusReceivedMessage => ms.find((m) => m.messageId === id)!;
    await r.deadLetterMessage(by('dead'), { deadLetterReason: 'bad', deadLetterErrorDescription: 'really bad' });
    await r.deferMessage(by('defer'));
    await r.abandonMessage(by('abandon'), { note: 'tried once' });
    const deferredSeq = by('defer').sequenceNumber!;
    await h.close();

    ({ h } = await open(dir));
    const c = h.client();
    const [dead] = await receiveExactly(
      c.createReceiver('settle', { subQueueType: 'deadLetter', receiveMode: 'receiveAndDelete' }),
      1,
    );
    assert.deepEqual(
      [dead?.messageId, dead?.deadLetterReason, dead?.deadLetterErrorDescription],
      ['dead', 'bad', 'really bad'],
    );
    const r2 = c.createReceiver('settle', NO_AUTO_RENEW);
    const [deferred] = await r2.receiveDeferredMessages(deferredSeq);
    assert.equal(deferred?.messageId, 'defer');
    await r2.completeMessage(deferred);
    const [abandoned] = await receiveExactly(r2, 1);
    assert.equal(abandoned?.messageId, 'abandon');
    assert.equal(abandoned?.deliveryCount, 1);
    assert.equal(abandoned?.applicationProperties?.note, 'tried once');
    await r2.completeMessage(abandoned);
    await h.close();

    ({ h } = await open(dir));
    const left = await h
      .client()
      .createReceiver('settle', { receiveMode: 'receiveAndDelete' })
      .receiveMessages(5, { maxWaitTimeInMs: 500 });
    assert.equal(left.length, 0, 'the settlements of the second run held too');
    await h.close();
  });

  test('compaction keeps the journal small while thousands of messages come and go', async () => {
    const dir = dataDir();
    const limit = 32 * 1024;
    let { h } = await open(dir, limit);
    const c = h.client();
    const sender = c.createSender('bulk');
    const r = c.createReceiver('bulk', { receiveMode: 'peekLock', ...NO_AUTO_RENEW });
    let maxFile = 0;
    let lastSeq = 0;
    for (let round = 0; round < 20; round++) {
      await sender.sendMessages(
        Array.from({ length: 100 }, (_, i) => ({ body: `payload ${round}-${i} ${'x'.repeat(100)}` })),
      );
      const got = await receiveExactly(r, 100, 10_000);
      assert.equal(got.length, 100);
      for (const m of got) await r.completeMessage(m);
      lastSeq = Math.max(lastSeq, ...got.map(seqOf));
      maxFile = Math.max(maxFile, statSync(segmentFile(dir)).size);
    }
    const stats = h.broker.journal()!;
    assert.ok(stats.compactions >= 5, `compacted ${stats.compactions} times`);
    // Written in all: ~2,000 sends of ~200 bytes plus locks and completions, far past the limit.
    assert.ok(maxFile < 2 * limit + 64 * 1024, `the live segment stayed near the limit (${maxFile} bytes)`);
    console.log(
      `# compaction: ${stats.written} bytes written in ${stats.commits} commits (${stats.operations} operations), ${stats.compactions} compactions, live segment at most ${maxFile} bytes (limit ${limit})`,
    );
    await h.close();

    ({ h } = await open(dir));
    assert.equal((await h.client().createReceiver('bulk').receiveMessages(1, { maxWaitTimeInMs: 300 })).length, 0);
    await h.client().createSender('bulk').sendMessages({ body: 'next' });
    const [next] = await receiveExactly(h.client().createReceiver('bulk', { receiveMode: 'receiveAndDelete' }), 1);
    assert.equal(seqOf(next!), lastSeq + 1, 'numbering survives compaction');
    assert.ok(statSync(segmentFile(dir)).size < 4 * 1024, 'an empty state is a small segment');
    await h.close();
  });

  test('a torn tail is cut off and reported in one line; what came before is intact', async () => {
    const dir = dataDir();
    let o = await open(dir);
    await o.h
      .client()
      .createSender('q')
      .sendMessages([{ body: 1 }, { body: 2 }, { body: 3 }]);
    await o.h.close();
    // Half a record, as a crash in the middle of a write leaves it.
    const record = frameRecord(
      encodeOps([
        { kind: 'remove', store: 'q', seq: 1 },
        { kind: 'remove', store: 'q', seq: 2 },
      ]),
    );
    appendFileSync(segmentFile(dir), record.subarray(0, Math.floor(record.length / 2)));

    o = await open(dir);
    const torn = o.notices.filter((l) => /torn or corrupt/.test(l));
    assert.equal(torn.length, 1, o.notices.join('\n'));
    assert.match(torn[0]!, /journal-\d+\.log .*\(torn record\).*cut \d+ bytes/);
    const got = await receiveExactly(o.h.client().createReceiver('q', { receiveMode: 'receiveAndDelete' }), 3, 3000);
    assert.deepEqual(
      got.map((m) => m.body as unknown),
      [1, 2, 3],
      'the half-written removals never happened',
    );
    await o.h.client().createSender('q').sendMessages({ body: 4 });
    await o.h.close();

    // A whole record with a bad checksum is cut the same way, and the cut is permanent.
    const bad = frameRecord(encodeOps([{ kind: 'remove', store: 'q', seq: 4 }]));
    bad[bad.length - 1] = bad[bad.length - 1]! ^ 0xff;
    appendFileSync(segmentFile(dir), bad);
    o = await open(dir);
    assert.equal(o.notices.filter((l) => /checksum mismatch/.test(l)).length, 1, o.notices.join('\n'));
    await o.h.close();
    o = await open(dir);
    assert.equal(o.notices.filter((l) => /torn or corrupt/.test(l)).length, 0, 'reported once, then gone');
    const [four] = await receiveExactly(o.h.client().createReceiver('q', { receiveMode: 'receiveAndDelete' }), 1);
    assert.equal(four?.body, 4);
    await o.h.close();
  });

  test('a segment that is not a journal at all is moved aside, and the broker starts', async () => {
    const dir = dataDir();
    let o = await open(dir);
    await o.h.close();
    const file = segmentFile(dir);
    writeFileSync(file, 'garbage, not a journal');
    o = await open(dir);
    assert.equal(o.notices.filter((l) => /unusable .*moved aside/.test(l)).length, 1, o.notices.join('\n'));
    assert.equal(readFileSync(`${file}.corrupt`, 'utf8'), 'garbage, not a journal');
    await o.h.client().createSender('q').sendMessages({ body: 'works' });
    const [m] = await receiveExactly(o.h.client().createReceiver('q', { receiveMode: 'receiveAndDelete' }), 1);
    assert.equal(m?.body, 'works');
    await o.h.close();
  });

  test('one data folder serves one broker', async () => {
    const dir = dataDir();
    const o = await open(dir);
    await assert.rejects(open(dir), /already open in this process/);
    await o.h.close();
  });
});
