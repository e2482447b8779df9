/**
 * The small items of the "safe by default" review (issue 50, item 7), each where it is kept:
 * redaction of callback keys, bearer tokens and webhook URL paths; refusal log lines without the
 * client's control characters; CSV cells a spreadsheet would run; `Cache-Control: private` on a
 * batch's report and timeline; an exact allowlist entry that still cannot reach loopback by name or
 * the metadata endpoint; and wildcard origins refused on shared suffixes.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';

import { HttpRequest } from '@azure/functions';

import { getBatchTimeline } from '../../functions/batches-http';
import type { Manifest } from '../../shared/batch/manifest';
import { timelineBody } from '../../shared/batch/timeline-view';
import { reportCsv } from '../../shared/billing/report';
import { eventSettings } from '../../shared/config/event-settings';
import { ConfigError } from '../../shared/errors';
import { RefusedAddressError, resolveChecked } from '../../shared/events/address-guard';
import { logTarget } from '../../shared/events/event-delivery';
import { redactSecrets } from '../../shared/redaction';
import { completed, context, logs, pump } from '../support/invoke';
import { post, routes } from '../support/route-calls';
import { testRuntime, useStorage } from '../support/storage';

useStorage();

describe('redaction', () => {
  test('callback keys, bearer tokens, JWTs and the paths of Slack/Teams/Discord webhook URLs are masked', () => {
    const key = `whsk_${randomBytes(32).toString('base64')}`;
    const jwt = `eyJhbGciOiJSUzI1NiJ9.${Buffer.from('{"oid":"x"}').toString('base64url')}.c2lnbmF0dXJlLXNpZ25hdHVyZQ`;
    const slack = 'https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX';
    const teams = 'https://contoso.webhook.office.com/webhookb2/aaaa@bbbb/IncomingWebhook/cccc/dddd';
    const text = `key ${key}; Authorization: Bearer ${jwt}; bare ${jwt}; POST ${slack} failed; ${teams}: 500`;
    const out = redactSecrets(text);
    for (const secret of [key.slice(5), jwt.split('.')[1]!, 'XXXXXXXXXXXXXXXXXXXXXXXX', 'IncomingWebhook'])
      assert.ok(!out.includes(secret), `${secret} in ${out}`);
    assert.match(out, /whsk_\*\*\*/);
    assert.match(out, /Bearer \*\*\*/);
    assert.match(out, /https:\/\/hooks\.slack\.com\/\*\*\*/);
    // The app's own words stay: "bearer token" is not a token.
    assert.equal(redactSecrets('a bearer token is required'), 'a bearer token is required');
    assert.equal(logTarget(slack), 'https://hooks.slack.com/…', 'a delivery log line names the origin only');
  });
});

describe('the refusal log line', () => {
  test("control characters of the client's field names do not reach it", async () => {
    const rt = await testRuntime();
    const mark = logs.length;
    const forged =
      '{"id":"t1","account":"a1","timestamp":"2026-03-01T10:00:00Z","type":"charge","amount":100,"currency":"EUR","x\\nbatch accepted\\u001b[2J":1}';
    const res = await post(rt.app, {}, forged);
    assert.equal(res.status, 400, JSON.stringify(res.jsonBody));
    const line = logs.slice(mark).find((l) => l.includes('batch refused'));
    assert.ok(line, logs.slice(mark).join('\n'));
    assert.ok(!/[\u0000-\u001f\u007f]/.test(line.replace(/^\w+: /, '')), JSON.stringify(line));
  });
});

describe('CSV report', () => {
  test("a text cell that starts like a formula gets a leading '; numbers, negative ones too, stay numbers", () => {
    const row = (account: string, net: number) => ({
      account,
      currency: 'EUR',
      transactions: 1,
      charges: 0,
      refunds: 0,
      net,
      tax: 0,
      total: net,
    });
    const csv = reportCsv({
      batchId: 'b-x',
      transactions: 4,
      rows: [row('-2+3', -100), row('=cmd', 5), row('+1', 1), row('@SUM(A1)', 2), row('ok-1', -7)],
      totals: [],
    });
    const lines = csv.trimEnd().split('\r\n').slice(1);
    assert.deepEqual(
      lines.map((l) => l.split(',').slice(0, 1).concat(l.split(',')[5]!)),
      [
        ["'-2+3", '-100'],
        ["'=cmd", '5'],
        ["'+1", '1'],
        ["'@SUM(A1)", '2'],
        ['ok-1', '-7'],
      ],
    );
  });
});

describe('Cache-Control on a batch', () => {
  test('the report and the timeline are private and not stored by a shared cache', async () => {
    const rt = await testRuntime();
    const sent = await post(rt.app, {});
    const batchId = (sent.jsonBody as { batchId: string }).batchId;
    const timeline = await getBatchTimeline(
      rt.app,
      new HttpRequest({ method: 'GET', url: `http://localhost/api/batches/${batchId}/timeline`, params: { batchId } }),
      context('getBatchTimeline'),
    );
    assert.equal(timeline.status, 200);
    assert.equal((timeline.headers as Record<string, string>)['Cache-Control'], 'private, no-store');
    await pump(rt.app, rt.events, () => completed(rt.observer, batchId), 30_000);
    const report = await routes.getBatchReport(rt.app, {}, batchId);
    assert.equal(report.status, 200);
    assert.equal((report.headers as Record<string, string>)['Cache-Control'], 'private, no-store');
  });
});

describe("a submitter's timeline", () => {
  test("shows its callback's delivery, not the operator's webhooks or topic", () => {
    const at = '2026-03-01T10:00:00.000Z';
    const d = (kind: 'webhook' | 'callback' | 'topic', target: string) => ({
      kind,
      target,
      state: 'delivered' as const,
      attempts: 1,
      dueAt: at,
    });
    const m: Manifest = {
      v: 1,
      batchId: 'b-x',
      state: 'completed',
      source: 'http',
      bodySha256: 'x',
      submittedAt: at,
      acceptedAt: at,
      completedAt: at,
      transactions: 1,
      chunkSize: 1,
      chunks: 1,
      queues: [],
      notification: 'sent',
      done: [0],
      failed: [],
      events: [
        {
          id: 'evt_1',
          type: 'com.pushdrain.batch.completed',
          body: '{}',
          deliveries: [
            d('webhook', 'https://ops.example/h'),
            d('callback', 'https://client.example/cb'),
            d('topic', 'batch-events'),
          ],
        },
      ],
    };
    const kinds = (operator: boolean) =>
      timelineBody(m, operator)
        ?.steps.filter((s) => s.step === 'delivery')
        .map((s) => s.delivery?.kind);
    assert.deepEqual(kinds(true), ['webhook', 'callback', 'topic']);
    assert.deepEqual(kinds(false), ['callback']);
  });
});

describe('the SSRF guard with an exact allowlist entry', () => {
  const answer = (address: string) => () =>
    Promise.resolve([{ address, family: address.includes(':') ? 6 : 4 }] as const).then((a) => [...a]);
  test('private networks open; the metadata endpoint, the platform endpoint and loopback by name never', async () => {
    assert.equal((await resolveChecked('billing.example.com', true, answer('10.1.2.3'))).address, '10.1.2.3');
    for (const address of ['169.254.169.254', '168.63.129.16', '127.0.0.1', '::1', '::ffff:169.254.169.254', 'fe80::1'])
      await assert.rejects(resolveChecked('billing.example.com', true, answer(address)), RefusedAddressError, address);
    for (const literal of ['169.254.169.254', '[::ffff:a9fe:a9fe]'])
      await assert.rejects(resolveChecked(literal, true), RefusedAddressError, literal);
    // A receiver the operator named as loopback itself (local development) is reachable.
    assert.equal((await resolveChecked('127.0.0.1', true)).address, '127.0.0.1');
    assert.equal((await resolveChecked('localhost', true, answer('127.0.0.1'))).address, '127.0.0.1');
  });
});

describe('wildcard callback origins', () => {
  test('refused on a shared suffix, where anyone can have a name; fine on a domain of ones own', () => {
    const env = (origins: string) => ({
      PUSHDRAIN_WEBHOOK_SECRET: `whsec_${randomBytes(32).toString('base64')}`,
      PUSHDRAIN_CALLBACK_SIGNING_KEY: `whsk_${randomBytes(32).toString('base64')}`,
      PUSHDRAIN_CALLBACK_ORIGINS: origins,
    });
    for (const bad of [
      'https://*.co.uk',
      'https://*.azurewebsites.net',
      'https://*.com.au:8443',
      'https://*.github.io',
    ])
      assert.throws(
        () => eventSettings(env(bad)),
        (e: unknown) =>
          e instanceof ConfigError && /entry 1 is a wildcard on .*list the origins exactly/.test(e.message),
        bad,
      );
    assert.deepEqual(eventSettings(env('https://*.example.co.uk,https://*.contoso.com')).callbackOrigins, [
      'https://*.example.co.uk',
      'https://*.contoso.com',
    ]);
  });
});
