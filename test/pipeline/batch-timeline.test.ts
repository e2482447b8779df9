/**
 * The batch timeline: what the progress writes fold into the manifest (chunks billed and folded,
 * the finalize), read back through the real handler on Azurite and checked against the manifest;
 * the same access as the batch's status in entra mode (another submitter's batch answers as a
 * missing one, a refusal makes no Storage request); and its size bounded whatever the chunk count.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';

import { HttpRequest, type HttpResponseInit } from '@azure/functions';

import { getBatchTimeline } from '../../functions/batches-http';
import type { PushdrainApp } from '../../shared/app';
import type { Manifest } from '../../shared/batch/manifest';
import { BUCKETS, emptyTimeline, foldDone, foldFailed } from '../../shared/batch/timeline';
import type { BatchTimelineBody, TimelineStep } from '../../shared/batch/timeline-view';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { invalidOnPurpose } from '../support/invalid-on-purpose';
import { completed, context, post, pump } from '../support/invoke';
import { testRuntime, useStorage } from '../support/storage';
import { type TestIssuer, testIssuer } from '../support/tokens';
import { startWebhookReceiver } from '../support/webhook-receiver';

useStorage();

let iss: TestIssuer;
before(async () => {
  iss = await testIssuer();
});
after(async () => {
  await iss.close();
});

function timeline(app: PushdrainApp, batchId: string, headers: Record<string, string> = {}): Promise<HttpResponseInit> {
  return getBatchTimeline(
    app,
    new HttpRequest({
      method: 'GET',
      url: `http://localhost/api/batches/${batchId}/timeline`,
      headers,
      params: { batchId },
    }),
    context('getBatchTimeline'),
  );
}

const after_ = (m: Manifest, iso: string | undefined): number => Date.parse(iso ?? '') - Date.parse(m.submittedAt);
const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);

describe('the batch timeline', () => {
  test('a completed batch: its steps agree with the manifest; its webhook delivery shows without the URL', async () => {
    const SECRET = `whsec_${randomBytes(24).toString('base64')}`;
    const hook = await startWebhookReceiver(SECRET);
    try {
      const { app, parts, events, observer, observerParts } = await testRuntime({
        PUSHDRAIN_CHUNK_SIZE: '10',
        PUSHDRAIN_WEBHOOK_URL: hook.url,
        PUSHDRAIN_WEBHOOK_SECRET: SECRET,
      });
      const res = await post(app, toNdjson(generate(45, 21, 5)));
      assert.equal(res.status, 202);
      const { batchId } = res.jsonBody as { batchId: string };
      const accepted = await timeline(app, batchId);
      assert.equal(accepted.status, 200);
      const before = accepted.jsonBody as BatchTimelineBody;
      assert.equal(before.status, 'accepted');
      assert.deepEqual(
        before.steps.map((s) => s.step),
        ['ingest'],
        'nothing billed yet',
      );

      await pump(app, events, () => completed(observer, batchId));
      await parts.events.idle();
      const m = (await observerParts.manifests.read(batchId))!.manifest;
      const got = await timeline(app, batchId);
      assert.equal(got.status, 200);
      const t = got.jsonBody as BatchTimelineBody;
      const step = (name: TimelineStep['step']): TimelineStep => {
        const s = t.steps.find((x) => x.step === name);
        assert.ok(s, `a ${name} step in ${JSON.stringify(t.steps)}`);
        return s;
      };
      assert.equal(t.status, 'completed');
      assert.equal(t.chunks, 5);
      assert.equal(step('ingest').endMs, after_(m, m.acceptedAt));
      assert.equal(step('map').chunks, 5, 'every chunk billed once');
      assert.equal(step('reduce').chunks, m.done.length);
      const final = step('finalize');
      assert.equal(final.label, 'report written');
      assert.equal(final.endMs, m.latencyMs);
      assert.equal(final.endMs, after_(m, m.completedAt));
      assert.equal(final.startMs, Math.max(0, m.latencyMs! - m.timeline!.finalizeMs!));
      // The finalize span of time holds the report's write (a request to Azurite: never under a millisecond).
      assert.ok(m.timeline!.finalizeMs! >= 1, `finalize took ${m.timeline!.finalizeMs} ms`);
      // Each chunk is billed before it is folded, and the batch ends after its last fold.
      assert.ok(step('map').startMs <= step('map').endMs!);
      assert.ok(step('map').endMs! <= step('reduce').endMs!);
      assert.ok(step('reduce').endMs! <= final.endMs);
      assert.equal(sum(t.buckets!.billed), 5);
      assert.equal(sum(t.buckets!.reduced), 5);
      assert.equal(sum(t.buckets!.failed), 0);
      assert.deepEqual(t.buckets!.billed, m.timeline!.billed);
      assert.ok(t.map!.slowest!.ms <= t.map!.workMs);
      assert.ok(t.map!.slowest!.chunk >= 0 && t.map!.slowest!.chunk < 5);
      // The event's delivery, by kind and state: never its URL (a submitter must not learn the operator's webhooks).
      const delivery = step('delivery');
      assert.deepEqual(delivery.delivery, { kind: 'webhook', state: 'delivered', attempts: 1 });
      assert.ok(delivery.endMs! >= final.endMs);
      assert.ok(!JSON.stringify(t).includes(new URL(hook.url).port), 'no webhook URL in the timeline');

      assert.equal((await timeline(app, 'b-00000000-0000-0000-0000-000000000000')).status, 404);
      assert.equal(
        (await timeline(app, '../etc', invalidOnPurpose())).status,
        400,
        'not a batch id: refused before any read',
      );
    } finally {
      await hook.close();
    }
  });

  test('PUSHDRAIN_AUTH=entra: a submitter sees its own timeline; another submitter gets what a missing batch gets', async () => {
    const rt = await testRuntime(iss.env);
    const alice = { authorization: `Bearer ${await iss.token('alice', ['Batches.Submit'])}` };
    const bob = { authorization: `Bearer ${await iss.token('bob', ['Batches.Submit'])}` };
    const reader = { authorization: `Bearer ${await iss.token('rita', ['Batches.Read'])}` };
    const res = await post(rt.app, toNdjson(generate(12, 22, 2)), alice);
    assert.equal(res.status, 202);
    const { batchId } = res.jsonBody as { batchId: string };
    await pump(rt.app, rt.events, () => completed(rt.observer, batchId));

    assert.equal((await timeline(rt.app, batchId, alice)).status, 200);
    assert.equal((await timeline(rt.app, batchId, reader)).status, 200, 'a reader reads any batch');
    const theirs = await timeline(rt.app, batchId, bob);
    const none = await timeline(rt.app, 'b-00000000-0000-0000-0000-000000000000', bob);
    assert.equal(theirs.status, 404);
    assert.deepEqual(theirs.jsonBody, none.jsonBody);
    assert.deepEqual(theirs.headers, none.headers);

    const requests = (): number => rt.app.storageTransactions().total ?? 0;
    const refusals: Record<string, string>[] = [{}, { authorization: `Bearer ${await iss.token('carol', [])}` }];
    for (const headers of refusals) {
      const used = requests();
      const refused = await timeline(rt.app, batchId, headers);
      assert.ok([401, 403].includes(refused.status ?? 0), `refused: ${refused.status}`);
      assert.ok(!JSON.stringify(refused.jsonBody).includes(batchId));
      assert.equal(requests(), used, 'a refusal makes no Storage request');
    }
  });

  test('bounded: 500 chunks over an hour keep at most 48 buckets a series, the same counts in any order', () => {
    const submitted = Date.parse('2026-11-25T10:00:00Z');
    const chunks = Array.from({ length: 500 }, (_, chunk) => ({
      chunk,
      billedAt: submitted + 2_000 + chunk * 7_000,
      mapMs: 100 + (chunk % 37),
    }));
    const fold = (order: typeof chunks): ReturnType<typeof emptyTimeline> => {
      const t = emptyTimeline();
      for (const c of order) foldDone(t, { submittedMs: submitted, chunk: c.chunk, at: c.billedAt + 500, billed: c });
      foldFailed(t, submitted, submitted + 3_600_000);
      return t;
    };
    const forward = fold(chunks);
    const shuffled = fold([...chunks].sort((a, b) => ((a.chunk * 7919) % 500) - ((b.chunk * 7919) % 500)));
    assert.deepEqual(forward, shuffled);
    for (const s of [forward.billed, forward.reduced, forward.failed]) assert.ok(s.length <= BUCKETS);
    assert.equal(sum(forward.billed), 500);
    assert.equal(sum(forward.reduced), 500);
    assert.equal(sum(forward.failed), 1);
    assert.ok(forward.bucketMs * BUCKETS > 3_600_000, `${forward.bucketMs} ms buckets span the hour`);
    assert.equal(forward.firstBilledMs, 2_000);
    assert.equal(forward.lastReducedMs, 2_000 + 499 * 7_000 + 500);
    assert.deepEqual(forward.slowest, { chunk: 36, ms: 136 });
    assert.ok(JSON.stringify(forward).length < 1_200, `${JSON.stringify(forward).length} characters`);
  });
});
