/**
 * The status report behind GET /api/ops/status and the dashboard: the in-memory activity
 * history (fake clock), the report on real Azurite (depths, oldest ages, poison records, open
 * and recent batches from the manifest listing, the meter kept apart), the Service Bus counts
 * by peeking on the development broker, and the HTTP adapters with the page shell.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';

import { HttpRequest } from '@azure/functions';

import { getDashboard, getStatus } from '../../functions/status-http';
import { ManifestListing } from '../../shared/batch/batch-list';
import type { Manifest } from '../../shared/batch/manifest';
import { layout } from '../../shared/layout';
import { TOPIC, WATCHDOG_QUEUE } from '../../shared/names';
import { ServiceBusInspector } from '../../shared/notify/service-bus-inspector';
import type { MessageProcessor, QueueMessage } from '../../shared/ports';
import { Activity } from '../../shared/status/activity';
import type { StatusReport } from '../../shared/status/status-report';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { receiveExactly, useBroker } from '../support/broker';
import { completed, context, post, pump } from '../support/invoke';
import { testRuntime, useStorage } from '../support/storage';

useStorage();

describe('activity history', () => {
  const T0 = 1_700_000_000_000; // a bucket boundary

  test('counts per 10 s bucket, fills gaps, and derives the window rates', () => {
    let t = T0;
    const a = new Activity(() => t);
    a.drains(1);
    a.storage(10);
    a.billed(2000);
    a.accepted(2000);
    a.drains(2);
    a.drains(0);
    // Seven idle buckets, one of them without a single request.
    for (let b = 1; b <= 7; b++) {
      t = T0 + b * 10_000 + 500;
      if (b !== 3) a.storage(1);
    }
    t = T0 + 80_000;
    const h = a.history();
    assert.equal(h.length, 9, 'every bucket from the first to now, the empty ones too');
    assert.deepEqual(h[0], { at: T0, storage: 10, billed: 2000, chunks: 0, accepted: 2000, drains: 2, busy: false });
    assert.deepEqual(h[3], { at: T0 + 30_000, storage: 0, billed: 0, chunks: 0, accepted: 0, drains: 0, busy: false });
    const w = a.window(3600);
    assert.equal(w.seconds, 80);
    assert.equal(w.storageTransactions, 16);
    assert.equal(w.businessTransactions, 2000);
    assert.equal(w.perThousand, 8);
    assert.equal(w.idleSeconds, 70);
    assert.equal(w.idleStorageTransactions, 6);
    // 70 s of idle right after work is no hourly figure: the count and the idle time are.
    assert.equal(w.idlePerHour, null, '6 requests in 70 idle seconds would "extrapolate" to 308.6 an hour');
    assert.equal(w.idleRateAfterSeconds, 600);
    // A short window sees only its own buckets.
    assert.equal(a.window(20).storageTransactions, 2, 'buckets from 60 s on');
    // Ten minutes of idle in all (nine more, with one request a minute): now a rate means something.
    for (let m = 1; m <= 9; m++) {
      t = T0 + 80_000 + m * 60_000 - 30_000;
      a.storage(1);
    }
    t = T0 + 80_000 + 9 * 60_000 - 10_000;
    const later = a.window(3600);
    assert.equal(later.idleSeconds, 600);
    assert.equal(later.idleStorageTransactions, 15);
    assert.equal(later.idlePerHour, 90, '15 requests in 10 idle minutes');
  });

  test('without enough idle time or anything billed, the rates are null, not invented', () => {
    let t = T0;
    const a = new Activity(() => t);
    a.storage(3);
    t += 30_000;
    const w = a.window(900);
    assert.equal(w.perThousand, null);
    assert.equal(w.idlePerHour, null);
    assert.equal(w.idleSeconds, 30);
  });

  test('only time with no work in flight is idle: start-up and the tail of a batch are not, and until ten minutes of it there is no hourly figure', async () => {
    let t = T0;
    const a = new Activity(() => t);
    let finish = (): void => {};
    // Start-up: provisioning and recovery, 25 s of it, with a bucket in between that saw no request.
    const startUp = a.during(() => new Promise<void>((r) => (finish = r)));
    a.storage(40);
    t = T0 + 25_000;
    a.storage(5);
    finish();
    await startUp;
    a.storage(2); // a request right after the work ended, in the same bucket
    t = T0 + 40_000;
    assert.equal(a.window(900).idleStorageTransactions, 0, 'nothing so far was idle');
    assert.equal(a.window(900).idlePerHour, null, 'no idle period yet: 10 s of it');
    // Then idle, but for one sweep that found nothing (one listing) ...
    t = T0 + 70_000;
    a.storage(1);
    // ... and a batch from 90 s to 105 s whose requests are all work.
    t = T0 + 90_000;
    await a.during(() => {
      a.storage(30);
      t = T0 + 105_000;
      a.storage(3);
      return Promise.resolve();
    });
    t = T0 + 120_000;
    const h = a.history();
    assert.deepEqual(
      h.map((p) => p.busy),
      [true, true, true, false, false, false, false, false, false, true, true, false, false],
      'a bucket is busy when work was in flight in it, requests or not',
    );
    const w = a.window(900);
    assert.equal(w.idleSeconds, 70, 'buckets 30-80 s and 110 s (the current one has just begun)');
    assert.equal(w.idleStorageTransactions, 1, 'only the listing made while nothing was in flight');
    assert.equal(w.idlePerHour, null, '70 idle seconds: too little for an hourly rate');
    assert.equal(w.storageTransactions, 81);
    // Work in flight right now keeps the current bucket busy.
    let done = (): void => {};
    const running = a.during(() => new Promise<void>((r) => (done = r)));
    t = T0 + 135_000;
    assert.equal(a.history().at(-1)?.busy, true);
    assert.equal(a.history().at(-2)?.busy, true, 'the bucket it began in');
    done();
    await running;
  });

  test('keeps a bounded history, and a drain running across buckets counts in each', () => {
    let t = T0;
    const a = new Activity(() => t, { buckets: 4 });
    a.drains(1);
    t += 25_000;
    a.storage(1);
    assert.deepEqual(
      a.history().map((p) => p.drains),
      [1, 0, 1],
      'the bucket without an event shows no drain; the one where it was seen does',
    );
    t += 100_000;
    assert.equal(a.history().length, 4);
    assert.equal(a.history()[0]?.at, T0 + 90_000);
  });

  test('the counting wrapper counts billed transactions and passes the hooks through', async () => {
    const a = new Activity(() => T0);
    const calls: string[] = [];
    const inner: MessageProcessor = {
      process: (m) => (m.text === 'bad' ? Promise.reject(new Error('no')) : Promise.resolve()),
      afterBatch: () => Promise.resolve(void calls.push('after')),
      onPoison: (_m, reason) => Promise.resolve(void calls.push(`poison ${reason}`)),
    };
    const p = a.countingBilled(inner, (m) => Number(m.text));
    const msg = (text: string): QueueMessage => ({ id: '1', popReceipt: 'r', dequeueCount: 1, text });
    await p.process(msg('7'));
    await assert.rejects(p.process(msg('bad')));
    await p.afterBatch?.();
    await p.onPoison?.(msg('x'), 'why');
    assert.equal(a.history()[0]?.billed, 7, 'only the processed message counts');
    assert.deepEqual(calls, ['after', 'poison why']);
  });
});

describe('status report on Azurite', () => {
  test('depths and oldest ages, open then recent batches, billed transactions, and its own requests metered apart', async () => {
    const { app, parts, events, observer } = await testRuntime({
      PUSHDRAIN_CHUNK_SIZE: '100',
      PUSHDRAIN_PARTITIONS: '2',
    });
    const { batchId } = (await post(app, toNdjson(generate(500, 401, 20)))).jsonBody as { batchId: string };
    const appBefore = app.storageTransactions().total ?? 0;
    const s1 = await app.statusReport();
    assert.equal(app.storageTransactions().total, appBefore, "the report's requests are not the app's");
    assert.ok((s1.storage.statusRequests.total ?? 0) >= 5, JSON.stringify(s1.storage.statusRequests));
    assert.match(s1.instance.id, /^i-[0-9a-f]{8}$/);
    const inputs = s1.queues.filter((q) => q.role === 'input');
    assert.deepEqual(
      s1.queues.map((q) => q.name),
      [...parts.names.inputQueues(), parts.names.resultsQueue],
    );
    assert.equal(
      inputs.reduce((n, q) => n + q.depth, 0),
      5,
    );
    for (const q of inputs)
      assert.equal(q.oldestAgeSeconds === null, q.depth === 0, `${q.name}: an age exactly when something is queued`);
    assert.ok(inputs.every((q) => (q.oldestAgeSeconds ?? 0) >= 0 && (q.oldestAgeSeconds ?? 0) < 60));
    assert.equal(s1.queues.find((q) => q.role === 'output')?.depth, 0);
    const open = s1.batches.open.find((b) => b.batchId === batchId);
    assert.deepEqual(
      open && { status: open.status, chunks: open.chunks, done: open.chunksDone, transactions: open.transactions },
      { status: 'accepted', chunks: 5, done: 0, transactions: 500 },
    );
    assert.equal(s1.batches.counts.accepted, 1);
    assert.deepEqual(s1.serviceBus, {
      available: false,
      reason: 'ServiceBusConnection is not configured for this app',
    });
    assert.deepEqual(s1.poison, { total: 0, shown: [] });

    await pump(app, events, () => completed(observer, batchId));
    const s2 = await app.statusReport();
    assert.ok(s2.queues.every((q) => q.depth === 0 && q.oldestAgeSeconds === null));
    assert.equal(s2.batches.open.length, 0);
    const done = s2.batches.recent[0];
    assert.equal(done?.batchId, batchId);
    assert.equal(done?.status, 'completed');
    assert.equal(done?.chunksDone, 5);
    assert.ok(typeof done?.latencyMs === 'number' && done.latencyMs > 0, 'latency from the manifest');
    assert.equal(s2.storage.window.businessTransactions, 500, 'the map step counted what it billed');
    assert.ok((s2.storage.window.perThousand ?? 0) > 0);
    const sum = (k: 'billed' | 'accepted'): number => s2.history.points.reduce((n, p) => n + p[k], 0);
    assert.equal(sum('billed'), 500);
    assert.equal(sum('accepted'), 500);
    const sampled = s2.history.points.filter((p) => p.depths);
    assert.equal(Object.keys(sampled.at(-1)?.depths ?? {}).length, s2.queues.length, 'every queue sampled');
    assert.ok(
      sampled.some((p) => inputs.every((q) => p.depths?.[q.name] === q.depth)),
      'the backlog the first report saw stays in the history (peak per bucket)',
    );
    assert.equal(s2.drains.running, 0);
    assert.ok((s2.storage.byOperation.total ?? 0) > appBefore);
  });

  test('a batch processed while nobody watched: the history has the depths the drains read and the chunks billed, and none of it passes for idle', async () => {
    // One message per receive: a full probe takes a slot, and the slot holder reads the depth for its fan-out.
    const { app, parts, events, observer } = await testRuntime({
      PUSHDRAIN_CHUNK_SIZE: '100',
      PUSHDRAIN_PARTITIONS: '2',
      PUSHDRAIN_DEQUEUE_BATCH_SIZE: '1',
    });
    const { batchId } = (await post(app, toNdjson(generate(500, 402, 20)))).jsonBody as { batchId: string };
    await pump(app, events, () => completed(observer, batchId));
    // No status call before this: the history is what the app recorded on its own.
    const points = parts.activity.history();
    assert.equal(
      points.reduce((n, p) => n + p.chunks, 0),
      5,
      'every chunk billed',
    );
    const inputs = parts.names.inputQueues();
    const deepest = inputs.map((q) => Math.max(-1, ...points.map((p) => p.depths?.[q] ?? -1)));
    assert.ok(
      deepest.every((d) => d >= 0),
      `every input queue's depth was read by its drain: ${JSON.stringify(deepest)}`,
    );
    assert.ok(
      deepest.some((d) => d > 0),
      `a drain saw its backlog: ${JSON.stringify(deepest)}`,
    );
    assert.ok(
      points.some((p) => p.depths?.[parts.names.resultsQueue] !== undefined),
      'the results queue too',
    );
    for (const p of points)
      assert.ok(p.storage === 0 || p.busy, `a bucket with requests was working: ${JSON.stringify(p)}`);
    const s = await app.statusReport();
    assert.equal(s.storage.window.idleStorageTransactions, 0);
    assert.deepEqual(
      s.history.points.map((p) => p.chunks),
      points.map((p) => p.chunks).concat(Array<number>(s.history.points.length - points.length).fill(0)),
      'the status report shows the same history',
    );
  });

  test('a poisoned chunk is listed with its queue, batch, chunk and reason', async () => {
    const { app, parts, events, observer, raw } = await testRuntime({
      PUSHDRAIN_CHUNK_SIZE: '100',
      PUSHDRAIN_PARTITIONS: '2',
    });
    const { batchId } = (await post(app, toNdjson(generate(300, 402, 10)))).jsonBody as { batchId: string };
    await raw
      .container('work')
      .getBlockBlobClient(layout.chunk(batchId, 1).name)
      .uploadData(Buffer.from('not gzip at all'));
    await pump(app, events, () => completed(observer, batchId));
    const s = await app.statusReport();
    const from = parts.names.inputQueueOf(batchId, 1);
    assert.equal(s.poison.total, 1);
    assert.deepEqual(
      s.poison.shown.map(({ queue, batchId: b, chunk, reason, dequeueCount }) => ({
        queue,
        b,
        chunk,
        reason,
        dequeueCount,
      })),
      [{ queue: from, b: batchId, chunk: 1, reason: 'chunk blob checksum mismatch', dequeueCount: 1 }],
    );
    const line = s.queues.find((q) => q.name === from);
    assert.equal(line?.poison.depth, 1);
    assert.notEqual(line?.poison.oldestAgeSeconds, null);
    const failed = s.batches.recent.find((b) => b.batchId === batchId);
    assert.equal(failed?.status, 'failed');
    assert.match(failed?.error ?? '', /chunk 1: chunk blob checksum mismatch/);
  });

  test('the manifest listing: summaries from metadata, older manifests read whole, internal states hidden, the scan bounded', async () => {
    const { parts, raw } = await testRuntime();
    const { blobs, manifests } = parts;
    const base: Manifest = {
      v: 1,
      batchId: 'x',
      state: 'accepted',
      source: 'http',
      bodySha256: '0'.repeat(64),
      submittedAt: '2026-01-01T00:00:00.000Z',
      transactions: 10,
      chunkSize: 10,
      chunks: 1,
      queues: [],
      notification: 'sent',
      done: [],
      failed: [],
    };
    await manifests.create({ ...base, batchId: 'b-open', submittedAt: '2026-01-01T00:00:02.000Z' });
    await manifests.create({ ...base, batchId: 'b-internal', state: 'ingesting' });
    // Written before summaries existed: no metadata, so the listing reads it whole.
    const legacy: Manifest = {
      ...base,
      batchId: 'b-legacy',
      state: 'completed',
      done: [0],
      completedAt: '2026-01-01T00:00:05.000Z',
      latencyMs: 5000,
    };
    await raw
      .container('batches')
      .getBlockBlobClient(layout.manifest('b-legacy').name)
      .uploadData(Buffer.from(JSON.stringify(legacy)));
    await raw.container('batches').getBlockBlobClient(layout.openBatch('b-open').name).uploadData(Buffer.from('{}'));
    const all = await new ManifestListing(blobs, manifests).list({ open: 10, recent: 10 });
    assert.deepEqual(
      all.open.map((b) => [b.batchId, b.status]),
      [['b-open', 'accepted']],
    );
    assert.deepEqual(
      all.recent.map((b) => [b.batchId, b.status, b.latencyMs]),
      [['b-legacy', 'completed', 5000]],
    );
    assert.deepEqual(all.counts, { accepted: 1, processing: 0, completed: 1, failed: 0 });
    assert.equal(all.scanned, 3);
    assert.equal(all.truncated, false);
    const bounded = await new ManifestListing(blobs, manifests, { scanLimit: 2 }).list({ open: 10, recent: 10 });
    assert.equal(bounded.scanned, 2);
    assert.equal(bounded.truncated, true);
    const noLegacyReads = await new ManifestListing(blobs, manifests, { legacyReads: 0 }).list({
      open: 10,
      recent: 10,
    });
    assert.equal(noLegacyReads.recent.length, 0);
    assert.equal(noLegacyReads.truncated, true, 'an unread manifest makes the listing incomplete, and it says so');
  });

  test('the HTTP adapters: the status as JSON; the page shell with its assets inline under a hash CSP, and no key', async () => {
    const { app } = await testRuntime();
    const res = await getStatus(
      app,
      new HttpRequest({ method: 'GET', url: 'http://localhost/api/ops/status' }),
      context('opsStatus'),
    );
    assert.equal(res.status, 200);
    assert.ok(Array.isArray((res.jsonBody as StatusReport).queues));
    const page = getDashboard(app, new HttpRequest({ method: 'GET', url: 'http://localhost/api/dashboard' }));
    assert.equal(page.status, 200);
    const html = typeof page.body === 'string' ? page.body : '';
    const headers = page.headers as Record<string, string>;
    assert.match(headers['Content-Type'] ?? '', /^text\/html/);
    const script = /<script>([\s\S]*)<\/script>/.exec(html)?.[1] ?? '';
    const style = /<style>([\s\S]*)<\/style>/.exec(html)?.[1] ?? '';
    assert.ok(script.includes('ops/status') && style.includes('.tile'), 'the assets are inlined');
    const sha = (t: string): string => `'sha256-${createHash('sha256').update(t).digest('base64')}'`;
    assert.ok(
      headers['Content-Security-Policy']?.includes(`script-src ${sha(script)}`),
      'the CSP allows exactly the inline script',
    );
    assert.ok(headers['Content-Security-Policy']?.includes(`style-src ${sha(style)}`));
    assert.ok(!/\/\*(SCRIPT|STYLE)\*\//.test(html));
    assert.ok(!/code=|key=[A-Za-z0-9]/.test(html.replace(/#key=…/g, '')), 'no key in the page');
    const again = getDashboard(
      app,
      new HttpRequest({
        method: 'GET',
        url: 'http://localhost/api/dashboard',
        headers: { 'if-none-match': headers.ETag ?? '' },
      }),
    );
    assert.equal(again.status, 304);
  });
});

describe('Service Bus counts by peeking', () => {
  const bus = useBroker();

  test('active and dead-lettered messages per subscription, with the reasons; bounded; an unreadable entity says why', async () => {
    const client = bus.client();
    const sender = client.createSender(TOPIC);
    await sender.sendMessages(
      ['input', 'input', 'output'].map((role, i) => ({ body: { n: i, role }, applicationProperties: { role } })),
    );
    await sender.close();
    const receiver = client.createReceiver(TOPIC, 'drain');
    const [m] = await receiveExactly(receiver, 1);
    assert.ok(m);
    await receiver.deadLetterMessage(m, {
      deadLetterReason: 'MaxDeliveryCountExceeded',
      deadLetterErrorDescription: 'failed 10 times',
    });
    await receiver.close();

    const report = await new ServiceBusInspector(client, false).inspect();
    assert.equal(report.available, true);
    const by = new Map(report.available ? report.entities.map((e) => [e.entity, e]) : []);
    const drain = by.get(`${TOPIC}/Subscriptions/drain`);
    assert.deepEqual(drain && { active: drain.active, dead: drain.deadLetters, error: drain.error }, {
      active: 1,
      dead: 1,
      error: undefined,
    });
    assert.equal(drain?.deadLettered[0]?.reason, 'MaxDeliveryCountExceeded');
    assert.equal(drain?.deadLettered[0]?.description, 'failed 10 times');
    assert.match(drain?.deadLettered[0]?.body ?? '', /"role":"input"/);
    assert.equal(by.get(`${TOPIC}/Subscriptions/aggregate`)?.active, 1);
    assert.equal(by.get(`${TOPIC}/Subscriptions/scale`)?.active, 3, 'the unfiltered subscription has every event');
    assert.equal(by.get(WATCHDOG_QUEUE)?.active, 0);

    const bounded = await new ServiceBusInspector(client, false, [{ topic: TOPIC, subscription: 'scale' }], {
      limit: 2,
    }).inspect();
    assert.deepEqual(
      bounded.available && bounded.entities.map((e) => [e.active, e.truncated, e.deadLettersTruncated, e.error]),
      [[2, true, false, undefined]],
    );
    const missing = await new ServiceBusInspector(client, false, [{ queue: 'no-such-queue' }], {
      timeoutMs: 3000,
    }).inspect();
    assert.ok(missing.available && missing.entities[0]?.error, 'the error is reported per entity');
    // Peeking took nothing: the messages are all still there.
    const again = await new ServiceBusInspector(client, false).inspect();
    assert.equal(again.available && again.entities.find((e) => e.entity.endsWith('/scale'))?.active, 3);
  });
});
