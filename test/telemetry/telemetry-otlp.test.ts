/**
 * Telemetry as a collector sees it: an OTLP/HTTP receiver on 127.0.0.1, written here as a
 * collector's would be, takes what the app exports for a known batch (http/json decoded in
 * full; http/protobuf checked for its spans and instruments). And telemetry off: with neither
 * variable set, loading the whole app loads no OpenTelemetry module (require.cache of a child).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, afterEach, before, describe, test } from 'node:test';
import { promisify } from 'node:util';

import { describeTelemetry, telemetrySettings } from '../../shared/config/telemetry-settings';
import { ConfigError } from '../../shared/errors';
import { layout } from '../../shared/layout';
import { METRICS } from '../../shared/telemetry/otel-metrics';
import { startTelemetry } from '../../shared/telemetry/start-telemetry';
import type { Telemetry } from '../../shared/telemetry/telemetry';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { completed, post, pump } from '../support/invoke';
import { REPO_ROOT } from '../support/local-stack';
import { testRuntime, useStorage } from '../support/storage';
import { TracingReceiver } from '../support/tracing-receiver';
import { startWebhookReceiver } from '../support/webhook-receiver';

useStorage();

const SECRET = `whsec_${randomBytes(24).toString('base64')}`;

interface Received {
  path: string;
  contentType: string;
  body: Buffer;
}

/** The receiver: answers 200 `{}` to every export, as a collector does, and keeps what it got. */
let server: Server;
let endpoint: string;
const received: Received[] = [];

before(async () => {
  server = createServer((req: IncomingMessage, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      received.push({
        path: req.url ?? '',
        contentType: req.headers['content-type'] ?? '',
        body: Buffer.concat(parts),
      });
      res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/json' });
      res.end(req.headers['content-type']?.includes('json') ? '{}' : '');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(async () => {
  await new Promise((r) => server.close(r));
});

/** The variables these tests set. The SDK reads only process.env, so they go there, and back after each test. */
const OTEL_VARS = [
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_PROTOCOL',
  'OTEL_SERVICE_NAME',
  'OTEL_RESOURCE_ATTRIBUTES',
  'OTEL_TRACES_SAMPLER',
  'OTEL_TRACES_SAMPLER_ARG',
] as const;
const savedEnv = Object.fromEntries(OTEL_VARS.map((k) => [k, process.env[k]]));
function restoreEnv(): void {
  for (const k of OTEL_VARS)
    if (savedEnv[k] === undefined) delete process.env[k];
    else process.env[k] = savedEnv[k];
}
afterEach(restoreEnv);

/** Telemetry started as the worker starts it, from these variables (and no others of this list). */
function otlpTelemetry(vars: Partial<Record<(typeof OTEL_VARS)[number], string>>): Promise<Telemetry> {
  for (const k of OTEL_VARS) delete process.env[k];
  Object.assign(process.env, vars);
  return startTelemetry(telemetrySettings(process.env));
}

type AnyValue = { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean };
type KeyValue = { key: string; value: AnyValue };
interface DataPoint {
  attributes?: KeyValue[];
  asInt?: string | number;
  asDouble?: number;
  count?: string | number;
  sum?: number;
}
interface OtlpMetric {
  name: string;
  unit?: string;
  sum?: { dataPoints: DataPoint[] };
  gauge?: { dataPoints: DataPoint[] };
  histogram?: { dataPoints: DataPoint[] };
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes?: KeyValue[];
}

const attr = (kvs: KeyValue[] | undefined, key: string): unknown => {
  const v = kvs?.find((kv) => kv.key === key)?.value;
  return v && (v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : (v.doubleValue ?? v.boolValue)));
};
const valueOf = (p: DataPoint): number => Number(p.asInt ?? p.asDouble ?? 0);

function json<T>(path: string, key: string): T[] {
  return received
    .filter((r) => r.path === path && r.contentType.includes('json'))
    .flatMap((r) => (JSON.parse(r.body.toString('utf8')) as Record<string, T[]>)[key] ?? []);
}

describe('telemetry to an OTLP/HTTP collector', () => {
  test('http/json: the spans of a known batch and the pushdrain.* metrics with their values', async () => {
    received.length = 0;
    const vars = {
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'pushdrain-otlp-test',
    };
    assert.equal(describeTelemetry(telemetrySettings(vars)), `OTLP http/json to ${endpoint} as pushdrain-otlp-test`);
    const telemetry = await otlpTelemetry(vars);
    assert.equal(telemetry.enabled, true);
    const { app, events, observer } = await testRuntime({ PUSHDRAIN_CHUNK_SIZE: '10' }, { telemetry });
    const res = await post(app, toNdjson(generate(25, 11, 4)));
    assert.equal(res.status, 202);
    const { batchId } = res.jsonBody as { batchId: string };
    await pump(app, events, () => completed(observer, batchId));
    const storage = app.storageTransactions();
    await telemetry.shutdown(); // exports the buffered spans and the last metric collection

    // Spans: one resource, named by OTEL_SERVICE_NAME; ingest → 3 maps → 3 reduces, and the finalize.
    const resourceSpans = json<{
      resource: { attributes: KeyValue[] };
      scopeSpans: { spans: OtlpSpan[] }[];
    }>('/v1/traces', 'resourceSpans');
    assert.ok(resourceSpans.length > 0, 'spans arrived');
    for (const r of resourceSpans) assert.equal(attr(r.resource.attributes, 'service.name'), 'pushdrain-otlp-test');
    const spans = resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans));
    const batch = spans.filter((s) => attr(s.attributes, 'pushdrain.batch_id') === batchId);
    const ingest = batch.find((s) => s.name === 'pushdrain.ingest');
    assert.ok(ingest);
    const count = (name: string): number => batch.filter((s) => s.name === name).length;
    assert.deepEqual(
      { map: count('pushdrain.map'), reduce: count('pushdrain.reduce'), finalize: count('pushdrain.finalize') },
      { map: 3, reduce: 3, finalize: 1 },
    );
    for (const s of batch) assert.equal(s.traceId, ingest.traceId, `${s.name} in the batch's trace`);
    assert.equal(attr(ingest.attributes, 'pushdrain.transactions'), 25);

    // Metrics, cumulative: the last export holds the totals.
    const resourceMetrics = json<{ scopeMetrics: { metrics: OtlpMetric[] }[] }>('/v1/metrics', 'resourceMetrics');
    const all = resourceMetrics.flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics));
    const last = (name: string): OtlpMetric => {
      const found = all.filter((m) => m.name === name);
      assert.ok(found.length > 0, `${name} exported`);
      return found[found.length - 1]!;
    };
    const total = (name: string): number =>
      (last(name).sum?.dataPoints ?? last(name).gauge?.dataPoints ?? []).reduce((n, p) => n + valueOf(p), 0);
    assert.equal(total(METRICS.batchesAccepted), 1);
    assert.equal(total(METRICS.transactionsAccepted), 25);
    assert.equal(total(METRICS.batchesCompleted), 1);
    assert.equal(total(METRICS.transactionsBilled), 25);
    assert.equal(last(METRICS.batchesAccepted).unit, '{batch}');
    const duration = last(METRICS.batchDuration);
    assert.equal(duration.unit, 's');
    assert.equal(Number(duration.histogram?.dataPoints[0]?.count), 1);
    assert.equal(attr(duration.histogram?.dataPoints[0]?.attributes, 'state'), 'completed');
    // The storage meter's own figures, operation by operation.
    const byOp = Object.fromEntries(
      (last(METRICS.storageTransactions).sum?.dataPoints ?? []).map((p) => [
        attr(p.attributes, 'operation'),
        valueOf(p),
      ]),
    );
    const { total: meterTotal, ...ops } = storage;
    assert.deepEqual(byOp, ops);
    assert.equal(total(METRICS.storageTransactions), meterTotal);
    assert.equal(total(METRICS.drainsInProgress), 0);
    const depths = last(METRICS.queueDepth).gauge?.dataPoints ?? [];
    assert.ok(depths.length > 0 && depths.every((p) => typeof attr(p.attributes, 'queue') === 'string'));
    // Low cardinality: no data point carries the batch id.
    for (const m of all)
      for (const p of [
        ...(m.sum?.dataPoints ?? []),
        ...(m.gauge?.dataPoints ?? []),
        ...(m.histogram?.dataPoints ?? []),
      ])
        assert.ok(!JSON.stringify(p.attributes ?? []).includes(batchId), `${m.name} has no batch id`);
  });

  test('a failed batch with webhooks: its finalize span has error status; deliveries by outcome and target kind', async () => {
    received.length = 0;
    // Three operator webhooks on 127.0.0.1: one takes the event, one is gone (410), one keeps failing.
    const [ok, gone, down] = await Promise.all([
      startWebhookReceiver(SECRET),
      startWebhookReceiver(SECRET),
      startWebhookReceiver(SECRET),
    ]);
    try {
      gone.script([], 410);
      down.script([], 503);
      const telemetry = await otlpTelemetry({
        OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      });
      const { app, parts, events, observer, raw } = await testRuntime(
        {
          PUSHDRAIN_CHUNK_SIZE: '10',
          PUSHDRAIN_WEBHOOK_URL: [ok.url, gone.url, down.url].join(','),
          PUSHDRAIN_WEBHOOK_SECRET: SECRET,
          PUSHDRAIN_WEBHOOK_RETRY_SCHEDULE: '1',
        },
        { telemetry },
      );
      const res = await post(app, toNdjson(generate(25, 13, 4)));
      assert.equal(res.status, 202);
      const { batchId } = res.jsonBody as { batchId: string };
      // Chunk 1's blob is damaged before any drain: its map fails for good and the chunk is poisoned.
      await raw.container('work').getBlockBlobClient(layout.chunk(batchId, 1).name).uploadData(Buffer.from('no gzip'));
      await pump(app, events, () => completed(observer, batchId));
      assert.equal((await observer.status(batchId))?.status, 'failed');
      await parts.events.idle();
      // The failing webhook's retry fires (as the scheduled watchdog message would): its schedule is spent.
      const retry = events.checks.find((c) => c.check.batchId === batchId && 'kind' in c.check);
      assert.ok(retry && 'kind' in retry.check, 'a retry was scheduled for the failing webhook');
      assert.equal((await app.retryDelivery(retry.check)).kind, 'poisoned');
      assert.deepEqual(
        [ok.requests.length, gone.attempts.length, down.attempts.length],
        [1, 1, 2],
        'one delivery, one 410, two failed attempts',
      );
      await telemetry.shutdown();

      const spans = json<{ scopeSpans: { spans: (OtlpSpan & { status?: { code?: number | string } })[] }[] }>(
        '/v1/traces',
        'resourceSpans',
      ).flatMap((r) => r.scopeSpans.flatMap((s) => s.spans));
      const batch = spans.filter((s) => attr(s.attributes, 'pushdrain.batch_id') === batchId);
      const ingest = batch.find((s) => s.name === 'pushdrain.ingest');
      const finals = batch.filter((s) => s.name === 'pushdrain.finalize');
      assert.ok(ingest);
      assert.equal(finals.length, 1, 'the failed batch has its finalize span');
      const [final] = finals;
      assert.equal(final!.traceId, ingest.traceId, "in the batch's trace");
      assert.equal(final!.parentSpanId, ingest.spanId, 'finalize ← ingest');
      assert.ok([2, 'STATUS_CODE_ERROR'].includes(final!.status?.code ?? 0), `error status: ${JSON.stringify(final)}`);
      assert.equal(attr(final!.attributes, 'pushdrain.chunks_failed'), 1);

      const all = json<{ scopeMetrics: { metrics: OtlpMetric[] }[] }>('/v1/metrics', 'resourceMetrics').flatMap((r) =>
        r.scopeMetrics.flatMap((s) => s.metrics),
      );
      const last = (name: string): OtlpMetric | undefined => all.filter((m) => m.name === name).at(-1);
      const deliveries = last(METRICS.webhookDeliveries);
      assert.equal(deliveries?.unit, '{delivery}');
      const byOutcome = Object.fromEntries(
        (deliveries?.sum?.dataPoints ?? []).map((p) => [
          `${String(attr(p.attributes, 'outcome'))}/${String(attr(p.attributes, 'target_kind'))}`,
          valueOf(p),
        ]),
      );
      assert.deepEqual(byOutcome, {
        'delivered/webhook': 1,
        'gone/webhook': 1,
        'retry/webhook': 1,
        'poisoned/webhook': 1,
      });
      for (const p of deliveries?.sum?.dataPoints ?? [])
        assert.equal(p.attributes?.length, 2, 'outcome and target kind only: no URL, no batch id');
      const failed = last(METRICS.batchesFailed)?.sum?.dataPoints ?? [];
      assert.equal(
        failed.reduce((n, p) => n + valueOf(p), 0),
        1,
      );
      const poisoned = last(METRICS.poisonMoves)?.sum?.dataPoints ?? [];
      assert.deepEqual(
        poisoned.map((p) => [attr(p.attributes, 'stage'), valueOf(p)]),
        [['map', 1]],
      );
    } finally {
      await Promise.all([ok.close(), gone.close(), down.close()]);
    }
  });

  test('http/protobuf: spans and metrics arrive as protobuf', async () => {
    received.length = 0;
    const telemetry = await otlpTelemetry({
      OTEL_EXPORTER_OTLP_ENDPOINT: `${endpoint}/`,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
    });
    const { app, events, observer } = await testRuntime({ PUSHDRAIN_CHUNK_SIZE: '10' }, { telemetry });
    const res = await post(app, toNdjson(generate(12, 5, 2)));
    const { batchId } = res.jsonBody as { batchId: string };
    await pump(app, events, () => completed(observer, batchId));
    await telemetry.shutdown();
    const at = (path: string): Buffer => Buffer.concat(received.filter((r) => r.path === path).map((r) => r.body));
    assert.ok(
      received.every((r) => r.contentType === 'application/x-protobuf'),
      'every export is protobuf',
    );
    // Protobuf keeps strings as UTF-8 bytes: the names and the batch id are findable without a decoder.
    for (const s of ['pushdrain.ingest', 'pushdrain.map', 'pushdrain.reduce', 'pushdrain.finalize', batchId])
      assert.ok(at('/v1/traces').includes(s), `${s} in the exported spans`);
    for (const m of [METRICS.batchesCompleted, METRICS.transactionsBilled, METRICS.storageTransactions])
      assert.ok(at('/v1/metrics').includes(m), `${m} in the exported metrics`);
  });

  test('a bad endpoint or protocol fails at start-up naming the variable', () => {
    assert.throws(
      () => telemetrySettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url' }),
      (e: unknown) => {
        return e instanceof ConfigError && e.setting === 'OTEL_EXPORTER_OTLP_ENDPOINT';
      },
    );
    assert.throws(
      () => telemetrySettings({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http' }),
      (e: unknown) => e instanceof ConfigError && e.setting === 'OTEL_EXPORTER_OTLP_PROTOCOL',
    );
    assert.throws(
      () => telemetrySettings({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_METRIC_EXPORT_INTERVAL: '5s' }),
      (e: unknown) => e instanceof ConfigError && e.setting === 'OTEL_METRIC_EXPORT_INTERVAL',
    );
    // The SDK's own: grpc is a protocol it offers; OTEL_SDK_DISABLED turns everything off.
    assert.equal(
      describeTelemetry(
        telemetrySettings({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }),
      ),
      `OTLP grpc to ${endpoint} as pushdrain`,
    );
    assert.deepEqual(telemetrySettings({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_SDK_DISABLED: 'true' }), {
      kind: 'off',
    });
    // service.name as the SDK settles it: OTEL_SERVICE_NAME, else OTEL_RESOURCE_ATTRIBUTES, else ours.
    assert.equal(
      describeTelemetry(
        telemetrySettings({
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${endpoint}/v1/traces`,
          OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=dev,service.name=billing%20eu',
        }),
      ),
      `OTLP http/protobuf to ${endpoint}/v1/traces as billing eu`,
    );
    assert.deepEqual(telemetrySettings({}), { kind: 'off' });
    assert.equal(
      telemetrySettings({
        APPLICATIONINSIGHTS_CONNECTION_STRING: 'InstrumentationKey=00000000-0000-0000-0000-000000000000',
        APPLICATIONINSIGHTS_AUTHENTICATION_STRING: 'ClientId=abc;Authorization=AAD',
        OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
      }).kind,
      'azure-monitor',
      'Application Insights wins when both are set',
    );
  });
});

describe('the SDK configured by the standard OTEL_* variables', () => {
  type ResourceSpans = { resource: { attributes: KeyValue[] }; scopeSpans: { spans: OtlpSpan[] }[] };
  const spansOf = (batchId: string): { resource: KeyValue[]; span: OtlpSpan }[] =>
    json<ResourceSpans>('/v1/traces', 'resourceSpans').flatMap((r) =>
      r.scopeSpans.flatMap((s) =>
        s.spans
          .filter((span) => attr(span.attributes, 'pushdrain.batch_id') === batchId)
          .map((span) => ({ resource: r.resource.attributes, span })),
      ),
    );

  /** One batch through the app with telemetry from `vars`; its id once every export has arrived. */
  async function batchWith(vars: Parameters<typeof otlpTelemetry>[0]): Promise<string> {
    received.length = 0;
    const telemetry = await otlpTelemetry(vars);
    const { app, events, observer } = await testRuntime({ PUSHDRAIN_CHUNK_SIZE: '10' }, { telemetry });
    const res = await post(app, toNdjson(generate(15, 17, 2)));
    assert.equal(res.status, 202);
    const { batchId } = res.jsonBody as { batchId: string };
    await pump(app, events, () => completed(observer, batchId));
    await telemetry.shutdown(); // what is buffered is exported before this resolves
    return batchId;
  }

  test('OTEL_RESOURCE_ATTRIBUTES and OTEL_TRACES_SAMPLER=traceidratio take effect', async () => {
    const common = {
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=dev',
      OTEL_TRACES_SAMPLER: 'traceidratio',
    };
    const sampled = await batchWith({ ...common, OTEL_TRACES_SAMPLER_ARG: '1' });
    const kept = spansOf(sampled);
    assert.deepEqual([...new Set(kept.map((k) => k.span.name))].sort(), [
      'pushdrain.finalize',
      'pushdrain.ingest',
      'pushdrain.map',
      'pushdrain.reduce',
    ]);
    for (const { resource } of kept) {
      assert.equal(attr(resource, 'deployment.environment'), 'dev');
      // The default name stays under the variables that do not name one; the SDK's detectors add theirs.
      assert.equal(attr(resource, 'service.name'), 'pushdrain');
      assert.equal(typeof attr(resource, 'process.pid'), 'number');
    }

    const dropped = await batchWith({ ...common, OTEL_TRACES_SAMPLER_ARG: '0' });
    // The exporter ran (the metrics of that batch arrived), yet no span was sampled.
    assert.ok(
      received.some((r) => r.path === '/v1/metrics'),
      'the metrics still arrive',
    );
    assert.deepEqual(spansOf(dropped), []);
    assert.equal(json<ResourceSpans>('/v1/traces', 'resourceSpans').flatMap((r) => r.scopeSpans).length, 0);
  });

  test("a webhook receiver's span continues the batch's trace, under the span that produced the event", async () => {
    received.length = 0;
    const hook = await startWebhookReceiver(SECRET);
    const receiver = new TracingReceiver();
    try {
      const telemetry = await otlpTelemetry({
        OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      });
      const { app, parts, events, observer } = await testRuntime(
        { PUSHDRAIN_CHUNK_SIZE: '10', PUSHDRAIN_WEBHOOK_URL: hook.url, PUSHDRAIN_WEBHOOK_SECRET: SECRET },
        { telemetry },
      );
      const res = await post(app, toNdjson(generate(15, 19, 2)));
      const { batchId } = res.jsonBody as { batchId: string };
      await pump(app, events, () => completed(observer, batchId));
      await parts.events.idle();
      await telemetry.shutdown();
      assert.equal(hook.requests.length, 1, 'the event was delivered');
      const got = hook.requests[0]!;
      const handled = receiver.handle(got.event);

      const spans = spansOf(batchId).map((k) => k.span);
      const ingest = spans.find((s) => s.name === 'pushdrain.ingest');
      const finalize = spans.find((s) => s.name === 'pushdrain.finalize');
      assert.ok(ingest && finalize);
      assert.equal(handled.spanContext().traceId, ingest.traceId, "the receiver's span is in the batch's trace");
      assert.equal(
        handled.parentSpanContext?.spanId,
        finalize.spanId,
        'under the finalize span that produced the event',
      );
      // The attempt's own span, and the HTTP client span of its POST under it, whose header says so too.
      const all = json<ResourceSpans>('/v1/traces', 'resourceSpans').flatMap((r) =>
        r.scopeSpans.flatMap((s) => s.spans),
      );
      const deliver = all.find(
        (s) => s.name === 'pushdrain.deliver' && attr(s.attributes, 'pushdrain.event_id') === got.event.id,
      );
      assert.ok(deliver, 'a pushdrain.deliver span');
      assert.equal(deliver.parentSpanId, finalize.spanId);
      assert.equal(attr(deliver.attributes, 'http.response.status_code'), 200);
      const post_ = all.find((s) => s.parentSpanId === deliver.spanId);
      assert.ok(post_, `the POST's client span: ${all.map((s) => s.name).join(', ')}`);
      assert.equal(post_.traceId, ingest.traceId);
      assert.equal(got.raw.headers.traceparent?.slice(3, 35), ingest.traceId, "the request's traceparent header");
    } finally {
      await Promise.all([hook.close(), receiver.shutdown()]);
    }
  });
});

describe('telemetry off', () => {
  const run = promisify(execFile);
  /** Loads every function module as the worker does, then the app, and lists OpenTelemetry modules loaded. */
  const PROBE = `
    const { readdirSync } = require('node:fs');
    const { join } = require('node:path');
    const dir = join(process.cwd(), 'dist', 'functions');
    for (const f of readdirSync(dir)) if (f.endsWith('.js')) require(join(dir, f));
    const { workerTelemetry } = require(join(dir, 'telemetry.js'));
    const { createApp } = require(join(process.cwd(), 'dist', 'shared', 'create-app.js'));
    const { loadSettings } = require(join(process.cwd(), 'dist', 'shared', 'config', 'settings.js'));
    workerTelemetry().then(async (telemetry) => {
      const app = createApp(loadSettings({ StorageConnection: 'UseDevelopmentStorage=true' }), { telemetry });
      const pattern = /[\\\\/]node_modules[\\\\/](@opentelemetry|@azure[\\\\/](monitor-opentelemetry|functions-opentelemetry-instrumentation))[\\\\/]/;
      const loaded = Object.keys(require.cache).filter((k) => pattern.test(k));
      console.log(JSON.stringify({ enabled: telemetry.enabled, destination: app.telemetryDestination, loaded: loaded.length }));
      await telemetry.shutdown();
      process.exit(0);
    });
  `;
  const probe = async (env: NodeJS.ProcessEnv): Promise<{ enabled: boolean; destination: string; loaded: number }> => {
    const { stdout } = await run(process.execPath, ['-e', PROBE], { cwd: REPO_ROOT, env, timeout: 60_000 });
    return JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as {
      enabled: boolean;
      destination: string;
      loaded: number;
    };
  };

  test('with neither variable set, the whole app loads no OpenTelemetry module; with one set, it does', async () => {
    // A bare environment: nothing this machine has set can turn telemetry on.
    const off = await probe({});
    assert.deepEqual(off, { enabled: false, destination: 'telemetry off', loaded: 0 });
    // The check can fail: the same probe with an endpoint finds the SDK in require.cache.
    const on = await probe({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' });
    assert.equal(on.enabled, true);
    assert.ok(on.loaded > 10, `the SDK is loaded when on (${on.loaded} modules)`);
  });
});
