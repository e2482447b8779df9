/**
 * `npm start -- --traces`: the Aspire dashboard restored from NuGet and started beside the stack,
 * the app's OTLP exporter pointed at it. A batch submitted with a client's `traceparent` is found
 * through the dashboard's own telemetry API (enabled with an API key through its `Dashboard__…`
 * settings, which npm start passes on) as one trace: every span of the batch in the client's trace.
 * Killing npm start outright leaves no dashboard behind. Skipped with one line where dotnet is
 * missing; PUSHDRAIN_DOTNET_TESTS=required makes that a failure.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { type Azurite, startAzurite } from '../../tools/devstack/azurite';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { type BrokerHarness, startTestBroker } from '../support/broker';
import { browserSkip, launchBrowser } from '../support/browser';
import { dotnetSkip } from '../support/dotnet';
import { type HostProcess, runHostToExit, startHostProcess } from '../support/host-process';
import { LOCAL_KEY } from '../support/local-stack';
import { until } from '../support/poll';
import { uniquePrefix } from '../support/storage';

const skip = dotnetSkip();
const API_KEY = randomBytes(24).toString('hex');
const TRACE_ID = randomBytes(16).toString('hex');
const TRACEPARENT = `00-${TRACE_ID}-${randomBytes(8).toString('hex')}-01`;

interface OtlpSpan {
  traceId: string;
  name: string;
  attributes?: { key: string; value: { stringValue?: string } }[];
}

/** GET with node:http (the suite's fetch checks loopback `/api/…` answers against the app's document). */
function getDashboard(url: string, apiKey?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = get(url, { headers: apiKey ? { 'x-api-key': apiKey } : {}, timeout: 10_000 }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url} timed out`)));
    req.on('error', reject);
  });
}

async function spansOf(dashboard: string): Promise<OtlpSpan[]> {
  const res = await getDashboard(`${dashboard}/api/telemetry/traces`, API_KEY);
  assert.equal(res.status, 200, res.body);
  const body = JSON.parse(res.body) as { data: { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] } };
  return body.data.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans));
}

const batchIdOf = (s: OtlpSpan): string | undefined =>
  s.attributes?.find((a) => a.key === 'pushdrain.batch_id')?.value.stringValue;

describe('npm start -- --traces', { skip }, () => {
  let azurite: Azurite;
  let bus: BrokerHarness;
  let host: HostProcess;
  let dashboard = '';
  let loginUrl = '';
  let batchId = '';

  before(async () => {
    [azurite, bus] = await Promise.all([startAzurite(), startTestBroker()]);
    host = await startHostProcess(
      {
        StorageConnection: azurite.connectionString,
        ServiceBusConnection: bus.broker.connectionString,
        PUSHDRAIN_NAME_PREFIX: uniquePrefix(),
        PUSHDRAIN_SWEEP_SCHEDULE: '0 0 0 1 1 *',
        PUSHDRAIN_CHUNK_SIZE: '50',
        PUSHDRAIN_TRACES_PORT: '0',
        PUSHDRAIN_TRACES_OTLP_PORT: '0',
        Dashboard__Api__Enabled: 'true',
        Dashboard__Api__AuthMode: 'ApiKey',
        Dashboard__Api__PrimaryApiKey: API_KEY,
      },
      0,
      // A first restore downloads the dashboard (about 80 MB).
      10 * 60_000,
      { args: ['--traces'] },
    );
    const m = /^ {2}Traces {5}Aspire dashboard (http:\/\/127\.0\.0\.1:\d+) \(sign in: (\S+)\)$/m.exec(host.output());
    assert.ok(m?.[1], `the dashboard's URL is printed:\n${host.output().slice(-3000)}`);
    assert.match(m[2]!, new RegExp(`^${m[1]}/login\\?t=[0-9a-f]+$`), 'with its login token');
    dashboard = m[1];
    loginUrl = m[2]!;
  });

  after(async () => {
    await host?.stop();
    await bus?.close();
    await azurite?.stop();
  });

  test("a batch submitted with a traceparent is one trace in the dashboard, the client's", async () => {
    assert.match(host.output(), /^ {2}Telemetry {2}OTLP http\/protobuf to http:\/\/127\.0\.0\.1:\d+ as pushdrain$/m);
    assert.equal((await getDashboard(`${dashboard}/api/telemetry/traces`)).status, 401, 'the API wants its key');
    const res = await fetch(`${host.base}/api/batches`, {
      method: 'POST',
      body: toNdjson(generate(200, 53, 10)),
      headers: { 'Content-Type': 'application/x-ndjson', 'x-functions-key': LOCAL_KEY, traceparent: TRACEPARENT },
    });
    assert.equal(res.status, 202);
    const accepted = (await res.json()) as { batchId: string; chunks: number };
    batchId = accepted.batchId;
    const { chunks } = accepted;
    assert.equal(chunks, 4);
    // The spans of a finished batch reach the dashboard with the exporter's next batch (every 5 s).
    const batch = await until(
      "the batch's spans in the dashboard",
      120_000,
      async () => {
        const spans = (await spansOf(dashboard)).filter((s) => batchIdOf(s) === batchId);
        const names = spans.map((s) => s.name);
        return names.includes('pushdrain.ingest') &&
          names.includes('pushdrain.finalize') &&
          names.filter((n) => n === 'pushdrain.map').length === chunks
          ? spans
          : undefined;
      },
      { everyMs: 1000, context: () => host.output().slice(-3000) },
    );
    for (const s of batch) assert.equal(s.traceId, TRACE_ID, `${s.name} in the client's trace`);
    assert.equal(new Set(batch.map((s) => s.traceId)).size, 1, 'one trace');
  });

  test(
    "in a real browser: signed in with the printed URL, the trace's page shows the batch's spans",
    { skip: browserSkip() },
    async () => {
      assert.ok(batchId, 'the batch of the test before');
      const browser = await launchBrowser();
      try {
        const page = await browser.context.newPage();
        await page.goto(loginUrl);
        await page.waitForURL((url) => !url.pathname.startsWith('/login'), { timeout: 60_000 });
        await page.goto(`${dashboard}/traces/detail/${TRACE_ID}`);
        // The waterfall lists each span by name; the batch's chunks are four maps.
        await page.getByText('pushdrain.finalize').first().waitFor({ timeout: 60_000 });
        const text = await page.locator('body').innerText();
        assert.match(text, /pushdrain\.ingest/);
        assert.equal((text.match(/pushdrain\.map/g) ?? []).length >= 4, true, text.slice(0, 3000));
        assert.match(text, new RegExp(TRACE_ID.slice(0, 7)), "the client's trace id");
      } finally {
        await browser.close();
      }
    },
  );

  test('the dashboard stops with the stack: a clean stop (SIGINT), and npm start killed outright', async () => {
    const refused = (url: string) => async (): Promise<true | undefined> => {
      try {
        await getDashboard(`${url}/api/telemetry/traces`, API_KEY);
        return undefined;
      } catch (e) {
        return (e as NodeJS.ErrnoException).code === 'ECONNREFUSED' ? true : undefined;
      }
    };
    assert.equal(await host.stop(), 0);
    await until('the dashboard to stop with npm start', 30_000, refused(dashboard), { everyMs: 200 });
    await host.restart();
    const printed = [...host.output().matchAll(/Aspire dashboard (http:\/\/127\.0\.0\.1:\d+) /g)];
    assert.equal(printed.length, 2, 'a dashboard again with the restarted stack');
    const again = printed[1]![1]!;
    assert.equal((await getDashboard(`${again}/api/telemetry/traces`, API_KEY)).status, 200);
    await host.kill();
    await until('the dashboard to stop after npm start was killed', 30_000, refused(again), { everyMs: 200 });
  });
});

test('npm start -- --traces without dotnet: one line, exit 1, nothing started', async () => {
  const empty = mkdtempSync(join(tmpdir(), 'pushdrain-no-dotnet-'));
  try {
    // A PATH with nothing on it: the start script itself runs on this process's Node.
    const r = await runHostToExit(
      { PATH: empty, AZURITE_BLOB_PORT: '0', AZURITE_QUEUE_PORT: '0', SERVICEBUS_PORT: '0' },
      30_000,
      ['--traces'],
    );
    assert.equal(r.code, 1, r.output);
    assert.equal(
      r.output,
      'npm start: --traces needs the .NET SDK (dotnet) to fetch and run the Aspire dashboard, and there is no dotnet on PATH: install it, or set OTEL_EXPORTER_OTLP_ENDPOINT to a collector of your own\n',
    );
  } finally {
    rmSync(empty, { recursive: true, force: true });
  }
});
