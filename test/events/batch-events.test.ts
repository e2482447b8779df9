/**
 * Batch events on the real stack (Azurite, the development broker, the local host as `npm start`
 * runs it) to real receivers on 127.0.0.1 that verify every request with `standardwebhooks`:
 * exactly one verified event per event id, retries on the schedule, poison and redrive, a
 * receiver that never answers, and a kill -9 of the host's process group between completion and
 * delivery.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import type { ServiceBusReceivedMessage } from '@azure/service-bus';
import { BlobServiceClient } from '@azure/storage-blob';

import { eventSettings } from '../../shared/config/event-settings';
import { BATCH_EVENT_SOURCE } from '../../shared/events/batch-event';
import { deliveryAttempt } from '../../shared/events/delivery-attempt';
import { pendingDeliveries } from '../../shared/events/outbox';
import { batchIdFor, layout } from '../../shared/layout';
import { BATCH_EVENTS_TOPIC, entityNames } from '../../shared/names';
import { spoilChunks } from '../../tools/devstack/spoil-chunks';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { expectedReport } from '../../tools/testkit/oracle';
import { withAuditSubscription } from '../support/audit-subscription';
import { type BrokerHarness, startTestBroker } from '../support/broker';
import { callbackKeys } from '../support/callback-verifier';
import { type HostProcess, startHostProcess } from '../support/host-process';
import { invalidOnPurpose } from '../support/invalid-on-purpose';
import { LOCAL_KEY, type LocalStack, runCli, startLocalStack, submitHeld, wake } from '../support/local-stack';
import { uniquePrefix } from '../support/storage';
import { type ReceivedEvent, startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver';

const SECRET = `whsec_${randomBytes(24).toString('base64')}`;
/** Short waits, for tests: three retries a second apart, then poison. */
const SCHEDULE = '1,1,1';

let stack: LocalStack;
let main: WebhookReceiver;
let other: WebhookReceiver;
/** A client's own receiver, at an origin the operator allowlisted exactly: it holds only the public keys. */
let client: WebhookReceiver;
let clientKeys: string[] = [];
/** Where a redirect points: it must never be reached. */
let sink: WebhookReceiver;
/** An allowlisted callback that answers every request with a redirect to `sink`. */
let redirector: Server;
let redirects = 0;

before(async () => {
  [main, other, client, sink] = await Promise.all([
    startWebhookReceiver(SECRET),
    startWebhookReceiver(SECRET, '/other'),
    startWebhookReceiver({ publicKeys: () => clientKeys, me: { kind: 'key' } }, '/client/events'),
    startWebhookReceiver(SECRET, '/latest/meta-data'),
  ]);
  redirector = createServer((req, res) => {
    redirects++;
    req.resume();
    res.writeHead(302, { Location: sink.url }).end();
  });
  await new Promise<void>((r) => redirector.listen(0, '127.0.0.1', () => r()));
  stack = await startLocalStack(
    {
      PUSHDRAIN_CALLBACK_ORIGINS: `${new URL(client.url).origin},${redirectorOrigin()},https://*.allowed.test`,
      PUSHDRAIN_WEBHOOK_URL: `${main.url},${other.url}`,
      PUSHDRAIN_WEBHOOK_SECRET: SECRET,
      PUSHDRAIN_WEBHOOK_RETRY_SCHEDULE: SCHEDULE,
      PUSHDRAIN_CHUNK_SIZE: '100',
      PUSHDRAIN_MAX_DEQUEUE_COUNT: '2',
      PUSHDRAIN_VISIBILITY_TIMEOUT_SECONDS: '1',
      PUSHDRAIN_MAX_IDLE_MS: '500',
    },
    withAuditSubscription(),
  );
  clientKeys = await callbackKeys(stack.host.base);
});

after(async () => {
  await stack?.stop();
  for (const r of [main, other, client, sink]) await r?.close();
  redirector?.closeAllConnections();
  await new Promise((r) => redirector?.close(r));
});

function redirectorOrigin(): string {
  return `http://127.0.0.1:${(redirector.address() as AddressInfo).port}`;
}

async function post(
  base: string,
  body: Buffer,
  headers: Record<string, string>,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${base}/api/batches`, {
    method: 'POST',
    body,
    headers: { 'Content-Type': 'application/x-ndjson', 'x-functions-key': LOCAL_KEY, ...headers },
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function submit(base: string, lines: number, seed: number): Promise<{ batchId: string; txns: unknown[] }> {
  const txns = generate(lines, seed, 7);
  const res = await fetch(`${base}/api/batches`, {
    method: 'POST',
    body: toNdjson(txns),
    headers: { 'Content-Type': 'application/x-ndjson', 'x-functions-key': LOCAL_KEY },
  });
  assert.equal(res.status, 202, await res.clone().text());
  return { batchId: ((await res.json()) as { batchId: string }).batchId, txns };
}

async function statusOfBatch(base: string, batchId: string): Promise<{ status: string; completedAt?: string }> {
  return (await (
    await fetch(`${base}/api/batches/${batchId}`, { headers: { 'x-functions-key': LOCAL_KEY } })
  ).json()) as {
    status: string;
    completedAt?: string;
  };
}

/** The events `r` accepted (2xx) for this batch, one per distinct id. */
function eventsFor(r: WebhookReceiver, batchId: string): ReceivedEvent[] {
  return [...r.distinct().values()].filter((e) => e.event.subject === batchId);
}

async function received(
  host: HostProcess,
  r: WebhookReceiver,
  batchId: string,
  timeoutMs = 60_000,
): Promise<ReceivedEvent> {
  return host.until(`an event for ${batchId}`, timeoutMs, () => eventsFor(r, batchId)[0]);
}

async function redriveDeliveries(base: string): Promise<{ moved: number; byQueue: Record<string, number> }> {
  const res = await fetch(`${base}/api/ops/redrive`, {
    method: 'POST',
    body: JSON.stringify({ queue: 'deliveries' }),
    headers: { 'Content-Type': 'application/json', 'x-functions-key': LOCAL_KEY },
  });
  assert.equal(res.status, 200, await res.clone().text());
  return (await res.json()) as { moved: number; byQueue: Record<string, number> };
}

describe('batch events to signed webhooks', () => {
  test('each of several batches: exactly one verified batch.completed per event id, at every webhook', async (t) => {
    const batches = await Promise.all([
      submit(stack.host.base, 250, 11),
      submit(stack.host.base, 40, 12),
      submit(stack.host.base, 1, 13),
    ]);
    for (const { batchId, txns } of batches) {
      const got = await received(stack.host, main, batchId);
      await received(stack.host, other, batchId);
      const status = await statusOfBatch(stack.host.base, batchId);
      assert.equal(status.status, 'completed');
      assert.equal(got.contentType, 'application/cloudevents+json; charset=utf-8');
      assert.equal(got.webhookId, got.event.id, 'webhook-id is the CloudEvent id');
      assert.equal(got.event.type, 'com.pushdrain.batch.completed');
      assert.equal((got.event as unknown as { source: string }).source, BATCH_EVENT_SOURCE);
      assert.equal((got.event as unknown as { specversion: string }).specversion, '1.0');
      assert.equal(got.event.subject, batchId);
      assert.equal(got.event.time, status.completedAt);
      const data = got.event.data as {
        status: string;
        reportPath: string;
        summary: { transactions: number; totals: unknown[] };
      };
      assert.equal(data.status, 'completed');
      assert.equal(data.reportPath, `/api/batches/${batchId}/report`);
      assert.equal(data.summary.transactions, txns.length);
      assert.deepEqual(data.summary.totals, expectedReport(txns as Parameters<typeof expectedReport>[0]).totals);
      assert.equal('rows' in data, false, 'no report rows in the event');
      // A figure, not a check (speed is the bench's business): completion to webhook received.
      t.diagnostic(`${batchId}: completedAt → webhook received ${got.at - Date.parse(got.event.time)} ms`);
    }
    // Wait for the slower of the two, then count: one distinct event per batch, and never a second id.
    for (const r of [main, other])
      for (const { batchId } of batches) assert.equal(eventsFor(r, batchId).length, 1, `one event id for ${batchId}`);
    assert.equal(main.unverified + other.unverified, 0);
  });

  test('a batch with a poisoned chunk: one verified batch.failed with its error', async () => {
    const { batchId } = await submitHeld(stack, toNdjson(generate(10, 21, 3)));
    const blobs = BlobServiceClient.fromConnectionString(stack.azurite.connectionString);
    assert.deepEqual(await spoilChunks({ blobs, batchId, prefix: stack.prefix }), [0]);
    await wake(stack, entityNames(stack.prefix, 4).inputQueues());
    const got = await received(stack.host, main, batchId);
    assert.equal(got.event.type, 'com.pushdrain.batch.failed');
    const data = got.event.data as { status: string; error: string; chunksFailed: number; reportPath?: string };
    assert.equal(data.status, 'failed');
    assert.equal(data.chunksFailed, 1);
    assert.match(data.error, /chunk 0: chunk blob checksum mismatch/);
    assert.equal(data.reportPath, undefined, 'a failed batch has no report');
    await received(stack.host, other, batchId);
    assert.equal(eventsFor(main, batchId).length, 1);
  });

  test('503 three times, then 200: delivered once, each retry after its wait on the schedule', async () => {
    main.script([503, 503, 503]);
    const { batchId } = await submit(stack.host.base, 30, 31);
    const got = await received(stack.host, main, batchId);
    const tries = main.attempts.filter((a) => a.webhookId === got.webhookId);
    assert.deepEqual(
      tries.map((a) => a.answer),
      [503, 503, 503, 200],
    );
    for (let i = 1; i < tries.length; i++)
      assert.ok(
        tries[i]!.at - tries[i - 1]!.at >= 900,
        `retry ${i} waited its second (${tries[i]!.at - tries[i - 1]!.at} ms)`,
      );
    assert.equal(eventsFor(main, batchId).length, 1);
  });

  test('down past the schedule: poisoned with its last status, then redriven and delivered', async () => {
    main.script([], 503);
    const { batchId } = await submit(stack.host.base, 5, 41);
    const log = new RegExp(
      // The log names the receiver by its origin only: a path may hold a secret (Slack, Teams).
      `batch ${batchId} to http://127\\.0\\.0\\.1:\\d+/…: poisoned after 4 attempts, last HTTP 503`,
    );
    await stack.host.until('the delivery poisoned', 60_000, () => (log.test(stack.host.output()) ? true : undefined));
    const attempts = main.attempts.filter((a) => a.answer === 503).length;
    assert.ok(attempts >= 4);
    assert.equal(eventsFor(main, batchId).length, 0);
    main.script([], 200);
    const redriven = await redriveDeliveries(stack.host.base);
    assert.equal(redriven.byQueue.deliveries, 1);
    const got = await received(stack.host, main, batchId);
    assert.equal(got.event.type, 'com.pushdrain.batch.completed');
    assert.equal(eventsFor(main, batchId).length, 1);
  });

  test('a receiver that never answers delays neither the other receiver nor the next batch', async () => {
    other.script([], 'hang');
    try {
      const first = await submit(stack.host.base, 20, 51);
      await received(stack.host, main, first.batchId);
      const second = await submit(stack.host.base, 20, 52);
      await received(stack.host, main, second.batchId);
      assert.equal((await statusOfBatch(stack.host.base, second.batchId)).status, 'completed');
      // Both went out to the silent receiver too, and neither has been answered: nothing waited for it.
      const held = other.attempts.filter((a) => a.answer === 'hang').map((a) => a.webhookId);
      assert.ok(
        held.includes(eventsFor(main, first.batchId)[0]!.webhookId),
        'the first event is held at the silent receiver',
      );
      assert.equal(eventsFor(other, first.batchId).length, 0);
    } finally {
      other.script([], 200);
      other.release(200);
    }
  });
});

describe('batch events across a crash', () => {
  let bus: BrokerHarness;
  let host: HostProcess | undefined;
  let receiver: WebhookReceiver;

  before(async () => {
    [bus, receiver] = await Promise.all([startTestBroker(), startWebhookReceiver(SECRET)]);
  });

  after(async () => {
    await host?.kill();
    await bus?.close();
    await receiver?.close();
  });

  test('kill -9 of the process group after completion, before delivery: delivered after npm start again', async () => {
    host = await startHostProcess(
      {
        StorageConnection: stack.azurite.connectionString,
        ServiceBusConnection: bus.broker.connectionString,
        PUSHDRAIN_NAME_PREFIX: uniquePrefix(),
        PUSHDRAIN_SWEEP_SCHEDULE: '0 0 0 1 1 *', // never: only start-up recovery may deliver it
        PUSHDRAIN_WEBHOOK_URL: receiver.url,
        PUSHDRAIN_WEBHOOK_SECRET: SECRET,
      },
      0,
      30_000,
      { processGroup: true },
    );
    receiver.script([], 'hang'); // the first attempt reaches the receiver and gets no answer
    const { batchId } = await submit(host.base, 50, 61);
    await host.until('the first attempt arrived', 60_000, () => (receiver.attempts.length > 0 ? true : undefined));
    assert.equal((await statusOfBatch(host.base, batchId)).status, 'completed');
    await host.kill();
    receiver.script([], 200);
    receiver.release(503); // what the dead host's request would have got, had it lived
    assert.equal(eventsFor(receiver, batchId).length, 0, 'not delivered before the crash');
    await host.restart();
    const got = await received(host, receiver, batchId);
    assert.equal(got.event.type, 'com.pushdrain.batch.completed');
    assert.equal(got.webhookId, receiver.attempts[0]!.webhookId, 'the same event id as the lost attempt');
    const line = new RegExp(`Recovery: 1 open batch\\(es\\) \\(${batchId} delivering\\)`);
    await host.until('start-up recovery says so', 30_000, () => (line.test(host!.output()) ? true : undefined));
  });
});

describe('Callback-Url: the allowlist at submission, the SSRF guard at every delivery', () => {
  const body = toNdjson(generate(12, 71, 3));

  test('an origin not allowlisted, or not https, is 400 callback_not_allowed and writes nothing', async () => {
    const blobs = BlobServiceClient.fromConnectionString(stack.azurite.connectionString);
    for (const [i, callback] of [
      'https://evil.example/hook',
      'https://169.254.169.254/latest/meta-data/',
      'http://169.254.169.254/latest/meta-data/',
      `http://127.0.0.1:${Number(new URL(main.url).port) + 1}/other-port`,
      'https://user:pw@billing.allowed.test/x',
      'not a url',
    ].entries()) {
      const key = `refused-callback-${i}-${randomBytes(4).toString('hex')}`;
      const headers = { 'Idempotency-Key': key, 'Callback-Url': callback };
      // Only the last is outside the document (not a URI); the others break the app's allowlist.
      const res = await post(stack.host.base, body, callback === 'not a url' ? invalidOnPurpose(headers) : headers);
      assert.equal(res.status, 400, callback);
      assert.equal(res.body.error, 'callback_not_allowed', callback);
      assert.equal(String(res.body.message).includes('pw'), false, 'no credentials echoed');
      const batchId = batchIdFor(key);
      assert.equal((await fetch(`${stack.host.base}/api/batches/${batchId}`)).status, 404, callback);
      const manifest = blobs
        .getContainerClient(entityNames(stack.prefix, 4).container('batches'))
        .getBlobClient(layout.manifest(batchId).name);
      assert.equal(await manifest.exists(), false, `nothing written for ${callback}`);
    }
  });

  test('an exactly allowlisted loopback callback gets the verified event too, and is stored on the manifest', async () => {
    const res = await post(stack.host.base, body, { 'Callback-Url': client.url });
    assert.equal(res.status, 202);
    const batchId = String(res.body.batchId);
    const got = await received(stack.host, client, batchId);
    assert.equal(got.event.type, 'com.pushdrain.batch.completed');
    assert.equal((await received(stack.host, main, batchId)).webhookId, got.webhookId, 'one event, every target');
    const blobs = BlobServiceClient.fromConnectionString(stack.azurite.connectionString);
    const manifest = blobs
      .getContainerClient(entityNames(stack.prefix, 4).container('batches'))
      .getBlobClient(layout.manifest(batchId).name);
    // One GET (a ranged download could straddle a delivery's rewrite of the manifest).
    const chunks: Buffer[] = [];
    for await (const c of (await manifest.download()).readableStreamBody!) chunks.push(Buffer.from(c as Buffer));
    const text = Buffer.concat(chunks).toString('utf8');
    assert.equal((JSON.parse(text) as { callbackUrl: string }).callbackUrl, client.url);
  });

  test('the callback is part of the Idempotency-Key identity: another callback is a 422, the same one a replay', async () => {
    const key = `callback-identity-${randomBytes(4).toString('hex')}`;
    const first = await post(stack.host.base, body, { 'Idempotency-Key': key, 'Callback-Url': client.url });
    assert.equal(first.status, 202);
    const same = await post(stack.host.base, body, { 'Idempotency-Key': key, 'Callback-Url': client.url });
    assert.equal(same.status, 202);
    assert.equal(same.body.batchId, first.body.batchId);
    const other = await post(stack.host.base, body, {
      'Idempotency-Key': key,
      'Callback-Url': `${new URL(client.url).origin}/elsewhere`,
    });
    assert.equal(other.status, 422);
    assert.equal(other.body.error, 'idempotency_conflict');
    const none = await post(stack.host.base, body, { 'Idempotency-Key': key });
    assert.equal(none.status, 422, 'dropping the callback is another request too');
  });

  test('a redirect is never followed: the attempt fails with its 3xx and the target is never reached', async () => {
    const before = redirects;
    const res = await post(stack.host.base, body, { 'Callback-Url': `${redirectorOrigin()}/hook` });
    assert.equal(res.status, 202);
    const batchId = String(res.body.batchId);
    const line = new RegExp(
      `batch ${batchId} to ${redirectorOrigin().replace(/\./g, '\\.')}/…: attempt 1 failed \\(HTTP 302\\)`,
    );
    await stack.host.until('the redirected attempt failed', 60_000, () =>
      line.test(stack.host.output()) ? true : undefined,
    );
    assert.ok(redirects > before);
    assert.equal(sink.attempts.length, 0, 'the redirect target saw no request');
  });

  test('a wildcard-allowlisted host that resolves to loopback or the metadata address is refused at delivery', async () => {
    const port = new URL(sink.url).port;
    const settings = eventSettings({
      PUSHDRAIN_WEBHOOK_SECRET: SECRET,
      PUSHDRAIN_CALLBACK_ORIGINS: `https://*.allowed.test:${port}`,
      PUSHDRAIN_CALLBACK_SIGNING_KEY: `whsk_${randomBytes(32).toString('base64')}`,
    });
    // The resolver is the seam: these names resolve as an attacker's DNS would answer.
    const answers: Record<string, string> = {
      'loop.allowed.test': '127.0.0.1',
      'meta.allowed.test': '169.254.169.254',
    };
    const attempt = deliveryAttempt({
      settings,
      now: Date.now,
      lookup: (host) => Promise.resolve(answers[host] ? [{ address: answers[host], family: 4 as const }] : []),
    });
    const event = { id: 'evt_ssrf', type: 'com.pushdrain.batch.completed', body: '{}', deliveries: [] };
    for (const [host, address] of Object.entries(answers)) {
      const [d] = pendingDeliveries([{ kind: 'callback', target: `https://${host}:${port}/latest/meta-data` }], '');
      const result = await attempt(d!, event);
      assert.equal(result.status, undefined);
      assert.match(result.error ?? '', new RegExp(`^refused: ${host} resolves to ${address.replace(/\./g, '\\.')}`));
    }
    assert.equal(sink.attempts.length, 0);
  });
});

describe('the batch-events topic', () => {
  test('a subscriber through the official SDK receives the same CloudEvent the webhook got', async () => {
    const { batchId } = await submit(stack.host.base, 15, 81);
    const hook = await received(stack.host, main, batchId);
    const receiver = stack.bus.client().createReceiver(BATCH_EVENTS_TOPIC, 'audit');
    try {
      let found: ServiceBusReceivedMessage | undefined;
      for (let i = 0, deadline = Date.now() + 30_000; i < 100 && !found && Date.now() < deadline; i++) {
        for (const m of await receiver.receiveMessages(10, { maxWaitTimeInMs: 1000 })) {
          await receiver.completeMessage(m);
          if (m.applicationProperties?.['cloudEvents:subject'] === batchId) found = m;
        }
      }
      assert.ok(found, `an event for ${batchId} on ${BATCH_EVENTS_TOPIC}/audit`);
      const body = Buffer.isBuffer(found.body) ? found.body.toString('utf8') : JSON.stringify(found.body);
      assert.deepEqual(JSON.parse(body), hook.event, 'the same structured CloudEvent, byte for byte in JSON');
      assert.equal(found.contentType, 'application/cloudevents+json; charset=utf-8');
      assert.equal(found.messageId, hook.webhookId);
      assert.equal(found.applicationProperties?.['cloudEvents:type'], 'com.pushdrain.batch.completed');
      assert.equal(found.applicationProperties?.['cloudEvents:id'], hook.webhookId);
      assert.equal(found.applicationProperties?.['cloudEvents:specversion'], '1.0');
    } finally {
      await receiver.close();
    }
  });
});

describe('npx pushdrain submit --callback', () => {
  test('passes the Callback-Url header: an allowlisted one gets the event, another is refused with its reason', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'pd-events-')), 'batch.ndjson');
    writeFileSync(file, toNdjson(generate(8, 91, 2)));
    const env = { PUSHDRAIN_URL: stack.host.base, PUSHDRAIN_KEY: LOCAL_KEY };
    const ok = await runCli(['submit', file, '--callback', client.url, '--no-wait', '--json'], env, 120_000);
    assert.equal(ok.code, 0, ok.stderr);
    const { batchId } = JSON.parse(ok.stdout) as { batchId: string };
    assert.equal((await received(stack.host, client, batchId)).event.subject, batchId);
    const refused = await runCli(
      ['submit', file, '--callback', 'https://evil.example/hook', '--no-idempotency', '--no-wait'],
      env,
      120_000,
    );
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /callback_not_allowed|not in PUSHDRAIN_CALLBACK_ORIGINS/);
  });
});
