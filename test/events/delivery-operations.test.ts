/**
 * The operator's view of batch events, on the local stack (Azurite, the development broker, the local
 * host as `npm start` runs it) with real receivers on 127.0.0.1 that verify with `standardwebhooks`:
 * a delivery shows on `GET /api/ops/status` as pending, then retrying with its last status or error,
 * then poisoned (peeked from `deliveries-poison`), and is gone once redriven and delivered; a
 * callback's path and query never show. `POST /api/ops/webhooks/test` and `pushdrain webhooks test`
 * send a verified test event and answer per target; `pushdrain queues` lists `deliveries-poison`.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';

import type { StatusReport } from '../../shared/status/status-report';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { callbackKeys, verifyCallback } from '../support/callback-verifier';
import { invalidOnPurpose } from '../support/invalid-on-purpose';
import { LOCAL_KEY, type LocalStack, runCli, startLocalStack, statusOf } from '../support/local-stack';
import { portBelowEphemeral } from '../support/port-below-ephemeral';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver';

const SECRET = `whsec_${randomBytes(24).toString('base64')}`;
/** Three attempts, 3 s apart: long enough to see each state, short enough to reach poison. */
const SCHEDULE = '3,3';
const TOKEN = `tok${randomBytes(6).toString('hex')}`;

let stack: LocalStack;
let hook: WebhookReceiver;
/** An allowlisted callback origin where nothing listens until the test opens it. */
let callbackPort = 0;

before(async () => {
  [hook, callbackPort] = await Promise.all([startWebhookReceiver(SECRET), portBelowEphemeral()]);
  stack = await startLocalStack({
    PUSHDRAIN_WEBHOOK_URL: hook.url,
    PUSHDRAIN_WEBHOOK_SECRET: SECRET,
    PUSHDRAIN_WEBHOOK_RETRY_SCHEDULE: SCHEDULE,
    PUSHDRAIN_CALLBACK_ORIGINS: `http://127.0.0.1:${callbackPort}`,
  });
});

after(async () => {
  await stack?.stop();
  await hook?.close();
});

const cli = (args: readonly string[]) =>
  runCli(args, { PUSHDRAIN_URL: stack.host.base, PUSHDRAIN_KEY: LOCAL_KEY }, 60_000);

async function submit(lines: number, seed: number, callbackUrl: string): Promise<string> {
  const res = await fetch(`${stack.host.base}/api/batches`, {
    method: 'POST',
    body: toNdjson(generate(lines, seed, 3)),
    headers: { 'Content-Type': 'application/x-ndjson', 'x-functions-key': LOCAL_KEY, 'Callback-Url': callbackUrl },
  });
  assert.equal(res.status, 202, await res.clone().text());
  return ((await res.json()) as { batchId: string }).batchId;
}

/** Reads the status report until `probe` finds what it wants in it. */
function statusUntil<T>(what: string, probe: (s: StatusReport, text: string) => T | undefined): Promise<T> {
  return stack.host.until(what, 60_000, async () => {
    const s = await statusOf(stack);
    return probe(s, JSON.stringify(s));
  });
}

/** A callback receiver on the allowlisted port, verifying as a client would. */
async function openCallback(): Promise<{ ids: string[]; close: () => Promise<void> }> {
  const keys = await callbackKeys(stack.host.base);
  const ids: string[] = [];
  const server: Server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      try {
        verifyCallback(Buffer.concat(parts).toString('utf8'), req.headers, keys, { kind: 'key' });
        ids.push(String(req.headers['webhook-id']));
        res.writeHead(204).end();
      } catch {
        res.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((r) => server.listen(callbackPort, '127.0.0.1', () => r()));
  return {
    ids,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

describe('deliveries on the status report', () => {
  test('pending, retrying with its last status and error, poisoned; gone once redriven and delivered', async () => {
    const origin = new URL(hook.url).origin;
    const callbackOrigin = `http://127.0.0.1:${callbackPort}`;
    hook.script(['hang'], 503); // the first attempt waits for an answer: the delivery stays pending
    const batchId = await submit(5, 701, `${callbackOrigin}/client/cb?token=${TOKEN}`);

    const first = await statusUntil('the webhook pending and the callback retrying', (s) => {
      const mine = s.deliveries.shown.filter((l) => l.batchId === batchId);
      const webhook = mine.find((l) => l.kind === 'webhook');
      const callback = mine.find((l) => l.kind === 'callback');
      return webhook && callback?.state === 'retrying' ? { s, webhook, callback } : undefined;
    });
    assert.equal(first.s.batches.recent.find((b) => b.batchId === batchId)?.status, 'completed');
    assert.deepEqual(
      { state: first.webhook.state, attempts: first.webhook.attempts, target: first.webhook.target },
      { state: 'pending', attempts: 0, target: origin },
    );
    assert.equal(first.callback.target, callbackOrigin, 'a callback shows as its origin only');
    assert.match(first.callback.lastError ?? '', /ECONNREFUSED/);
    assert.ok(Date.parse(first.callback.nextAttemptAt) > Date.parse(first.s.generatedAt) - 1000);
    assert.equal(first.callback.eventType, 'com.pushdrain.batch.completed');
    assert.equal(first.callback.eventId, first.webhook.eventId, 'one event, two deliveries');

    hook.release(503); // the held attempt gets its answer: attempt 1 failed with HTTP 503
    const retrying = await statusUntil('the webhook retrying after its 503', (s) =>
      s.deliveries.shown.find((l) => l.batchId === batchId && l.kind === 'webhook' && l.state === 'retrying'),
    );
    assert.equal(retrying.lastStatus, 503);
    assert.ok(retrying.attempts >= 1);

    const poisoned = await statusUntil('both deliveries poisoned', (s) => {
      const mine = s.deliveries.poisoned.shown.filter((p) => p.batchId === batchId);
      return mine.length === 2 && !s.deliveries.shown.some((l) => l.batchId === batchId) ? s : undefined;
    });
    const records = poisoned.deliveries.poisoned.shown.filter((p) => p.batchId === batchId);
    const byKind = Object.fromEntries(records.map((p) => [p.kind, p]));
    assert.equal(poisoned.deliveries.poisoned.depth, 2);
    assert.equal(byKind.webhook?.lastStatus, 503);
    assert.equal(byKind.webhook?.attempts, 3);
    assert.equal(byKind.webhook?.target, origin);
    assert.match(byKind.callback?.lastError ?? '', /ECONNREFUSED/);
    assert.equal(byKind.callback?.target, callbackOrigin);
    assert.equal(poisoned.deliveries.poisoned.queue.endsWith('deliveries-poison'), true);
    const text = JSON.stringify(poisoned);
    assert.equal(text.includes(TOKEN), false, 'no callback query in the status');
    assert.equal(text.includes('/client/cb'), false, 'no callback path in the status');
    assert.equal(text.includes(SECRET.slice(6)), false, 'no secret in the status');

    // npx pushdrain queues lists deliveries-poison with its depth, and why each delivery is there.
    const queues = await cli(['queues']);
    assert.equal(queues.code, 0, queues.stderr);
    assert.match(queues.stdout, /event deliveries: 0 pending, 0 retrying; \S*deliveries-poison: 2 \(oldest /);
    assert.match(
      queues.stdout,
      new RegExp(
        `poisoned: ${batchId} com\\.pushdrain\\.batch\\.completed to ${origin.replace(/\./g, '\\.')}: 3 attempt\\(s\\), last HTTP 503`,
      ),
    );
    assert.match(
      queues.stdout,
      new RegExp(`poisoned: ${batchId} .* last 127\\.0\\.0\\.1:${callbackPort}: ECONNREFUSED`),
    );
    assert.equal(queues.stdout.includes(TOKEN), false);
    const asJson = JSON.parse((await cli(['queues', '--json'])).stdout) as Pick<StatusReport, 'deliveries'>;
    assert.equal(asJson.deliveries.poisoned.depth, 2);

    // The fix: both receivers answer now. Redrive sends both again, and they land.
    hook.script([], 200);
    const callback = await openCallback();
    try {
      const redrive = await cli(['redrive', '--queue', 'deliveries', '--json']);
      assert.equal(redrive.code, 0, redrive.stderr);
      assert.equal((JSON.parse(redrive.stdout) as { byQueue: Record<string, number> }).byQueue.deliveries, 2);
      await stack.host.until('both delivered', 60_000, () =>
        callback.ids.length > 0 && [...hook.distinct().values()].some((e) => e.event.subject === batchId)
          ? true
          : undefined,
      );
      assert.equal(callback.ids[0], first.callback.eventId, 'the same event id after the redrive');
      // The marker goes in its own write, after the delivery's record: wait for both, so that a status
      // read between the two writes is not taken for a marker left behind (which would time out here).
      const after = await statusUntil('no delivery of the batch left, and its open marker gone', (s) =>
        s.deliveries.poisoned.depth === 0 &&
        !s.deliveries.shown.some((l) => l.batchId === batchId) &&
        s.batches.delivering.total === 0
          ? s
          : undefined,
      );
      assert.deepEqual(after.deliveries.poisoned.shown, []);
      assert.equal(after.batches.delivering.total, 0, 'the open marker is gone with the last delivery');
    } finally {
      await callback.close();
    }
    assert.equal(hook.unverified, 0);
  });
});

describe('send a test event', () => {
  test('POST /api/ops/webhooks/test: one verified com.pushdrain.webhook.test, answered per target', async () => {
    hook.script([], 200);
    const before = hook.requests.length;
    const res = await fetch(`${stack.host.base}/api/ops/webhooks/test`, {
      method: 'POST',
      headers: { 'x-functions-key': LOCAL_KEY },
    });
    assert.equal(res.status, 200);
    const body = (await res.json()) as {
      eventId: string;
      type: string;
      failed: number;
      targets: { target: string; ok: boolean; status: number; ms: number }[];
    };
    assert.equal(body.type, 'com.pushdrain.webhook.test');
    assert.equal(body.failed, 0);
    assert.equal(body.targets.length, 1);
    assert.equal(body.targets[0]?.target, hook.url);
    assert.equal(body.targets[0]?.status, 200);
    assert.ok(body.targets[0].ms >= 0);
    const got = hook.requests.slice(before);
    assert.equal(got.length, 1);
    assert.equal(got[0]?.webhookId, body.eventId, 'the receiver verified the signature of this event');
    assert.equal(got[0]?.event.type, 'com.pushdrain.webhook.test');
    assert.equal(got[0]?.contentType, 'application/cloudevents+json; charset=utf-8');

    const bad = await fetch(`${stack.host.base}/api/ops/webhooks/test`, {
      method: 'POST',
      headers: invalidOnPurpose({ 'x-functions-key': LOCAL_KEY, 'Content-Type': 'application/json' }),
      body: '{"target":"https://evil.example"}',
    });
    assert.equal(bad.status, 400);
    assert.equal(((await bad.json()) as { error: string }).error, 'invalid_request');
  });

  test('npx pushdrain webhooks test: the per-target answer, exit 0 when all took it and 4 when one did not', async () => {
    hook.script([], 200);
    const ok = await cli(['webhooks', 'test']);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /^test event evt_[0-9a-f-]+ \(com\.pushdrain\.webhook\.test\) sent to 1 webhook\(s\):/);
    assert.match(ok.stdout, new RegExp(`${hook.url.replace(/\./g, '\\.')}\\s+ok\\s+200\\s+[\\d,]+ ms`));

    hook.script([], 503);
    try {
      const failed = await cli(['webhooks', 'test', '--json']);
      assert.equal(failed.code, 4, failed.stderr);
      const r = JSON.parse(failed.stdout) as { failed: number; targets: { ok: boolean; status: number }[] };
      assert.equal(r.failed, 1);
      assert.deepEqual(
        r.targets.map((t) => [t.ok, t.status]),
        [[false, 503]],
      );
    } finally {
      hook.script([], 200);
    }
  });
});
