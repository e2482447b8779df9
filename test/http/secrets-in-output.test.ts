/**
 * docs/SECURITY.md's promise that no secret leaves the app, checked. The local host runs as a
 * child (as `npm start` does against given connections) on an Azurite account with a random key,
 * behind the fault proxy, with a Service Bus connection string carrying a recognisable
 * SharedAccessKey. Success and failure paths are exercised (400, 404, 413, 415, 503, drain
 * errors, poison, bad settings at start-up); every byte the host prints and every HTTP response
 * is captured, and none may carry the account key, the SAS key, a SharedAccessSignature or a
 * `sig=`. Then, unit by unit: secret-free ConfigError messages and error bodies.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';

import { InvocationContext } from '@azure/functions';
import { BlobServiceClient, RestError } from '@azure/storage-blob';
import { QueueServiceClient } from '@azure/storage-queue';

import { errorResponse } from '../../functions/http-errors';
import { loadSettings } from '../../shared/config/settings';
import { ConfigError, TransientError, ValidationError } from '../../shared/errors';
import { entityNames, TOPIC } from '../../shared/names';
import { redactSecrets } from '../../shared/redaction';
import { type Azurite, startAzurite } from '../../tools/devstack/azurite';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { startStorageProxy, type StorageProxy } from '../../tools/testkit/storage-proxy';
import { type BrokerHarness, startTestBroker } from '../support/broker';
import { type HostEnv, type HostProcess, runHostToExit, startHostProcess } from '../support/host-process';
import { invalidOnPurpose } from '../support/invalid-on-purpose';
import { uniquePrefix } from '../support/storage';

const ACCOUNT = `sec${randomBytes(3).toString('hex')}`;
const ACCOUNT_KEY = randomBytes(64).toString('base64');
const SAS_KEY = `SasKey${randomBytes(24).toString('base64url')}`;
const PREFIX = uniquePrefix();
const names = entityNames(PREFIX, 2);

/** Every form a secret could leak in: as is, URL-encoded, and the marker words of signed URLs. */
const FORBIDDEN: [string, RegExp][] = [
  ['the account key', new RegExp(escape(ACCOUNT_KEY))],
  ['the account key, URL-encoded', new RegExp(escape(encodeURIComponent(ACCOUNT_KEY)))],
  ['the first 16 characters of the account key', new RegExp(escape(ACCOUNT_KEY.slice(0, 16)))],
  ['the SAS key', new RegExp(escape(SAS_KEY))],
  ['a SharedAccessSignature', /SharedAccessSignature(?![=\s]\*\*\*)/i],
  ['a sig= parameter', /sig(=|%3D)(?!\*\*\*)/i],
  ['an unmasked AccountKey=', /AccountKey=(?!\*\*\*)/i],
  ['an unmasked SharedAccessKey=', /SharedAccessKey=(?!\*\*\*)/i],
];

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function assertNoSecret(where: string, text: string): void {
  for (const [what, re] of FORBIDDEN) {
    const m = re.exec(text);
    assert.equal(
      m,
      null,
      `${what} appears in ${where}: …${m ? text.slice(Math.max(0, m.index - 80), m.index + 80) : ''}…`,
    );
  }
}

/** Everything that left the app: host output (all children) and every HTTP response. */
const transcript: { where: string; text: string }[] = [];

let azurite: Azurite;
let proxy: StorageProxy;
let bus: BrokerHarness;
let host: HostProcess;
let base = '';
let storageConnection = '';
let serviceBusConnection = '';

function hostEnv(extra: Record<string, string> = {}): HostEnv {
  return {
    StorageConnection: storageConnection,
    ServiceBusConnection: serviceBusConnection,
    PUSHDRAIN_NAME_PREFIX: PREFIX,
    PUSHDRAIN_PARTITIONS: '2',
    PUSHDRAIN_MAX_IDLE_MS: '300',
    PUSHDRAIN_MIN_IDLE_MS: '20',
    PUSHDRAIN_SWEEP_SCHEDULE: '*/2 * * * * *',
    PUSHDRAIN_MAX_BODY_BYTES: '65536',
    PUSHDRAIN_MAX_INFLATED_BYTES: '1048576',
    // The SDKs' own diagnostics are in the capture too, at their most talkative.
    AZURE_LOG_LEVEL: 'verbose',
    // rhea's DEBUG prints raw AMQP frames, tokens included: a documented exception (docs/SECURITY.md).
    DEBUG: undefined,
    ...extra,
  };
}

/** The members of a generic error body (RFC 9457 problem details with ours kept): nothing else, no internals. */
const GENERIC_ERROR_KEYS = ['detail', 'error', 'invocationId', 'message', 'status', 'title', 'type'];

/** fetch, recording the status line, the headers and the body of the answer. */
async function call(path: string, init: RequestInit = {}): Promise<{ status: number; body: string; headers: Headers }> {
  const res = await fetch(`${base}${path}`, {
    ...init,
    headers: { 'x-functions-key': 'local-host-ignores-keys', ...(init.headers as Record<string, string>) },
  });
  const body = await res.text();
  const headers = [...res.headers.entries()].map(([k, v]) => `${k}: ${v}`).join('\n');
  transcript.push({ where: `${init.method ?? 'GET'} ${path} → ${res.status}`, text: `${headers}\n\n${body}` });
  return { status: res.status, body, headers: res.headers };
}

const post = (body: Buffer | string, headers: Record<string, string> = {}): ReturnType<typeof call> =>
  call('/api/batches', { method: 'POST', body, headers: { 'Content-Type': 'application/x-ndjson', ...headers } });

/** Runs the host with a bad setting: it must refuse to start, name the setting, and print no secret. */
async function failedStart(extra: Record<string, string>): Promise<{ code: number | null; text: string }> {
  const { code, output } = await runHostToExit(hostEnv(extra));
  transcript.push({ where: `start-up with ${Object.keys(extra).join(', ')}`, text: output });
  return { code, text: output };
}

before(async () => {
  [azurite, bus] = await Promise.all([
    startAzurite({ env: { AZURITE_ACCOUNTS: `${ACCOUNT}:${ACCOUNT_KEY}` } }),
    startTestBroker(),
  ]);
  proxy = await startStorageProxy(azurite);
  const direct = `DefaultEndpointsProtocol=http;AccountName=${ACCOUNT};AccountKey=${ACCOUNT_KEY};BlobEndpoint=http://127.0.0.1:${azurite.blobPort}/${ACCOUNT};QueueEndpoint=http://127.0.0.1:${azurite.queuePort}/${ACCOUNT};`;
  storageConnection = proxy.connectionString(direct);
  serviceBusConnection = `Endpoint=sb://localhost:${bus.broker.port};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=${SAS_KEY};UseDevelopmentEmulator=true;`;
  host = await startHostProcess(hostEnv());
  base = `http://127.0.0.1:${host.port}`;
});

after(async () => {
  await host?.kill();
  await bus?.close();
  await proxy?.close();
  await azurite?.stop();
});

describe('no secret leaves the app, on any path', () => {
  test('the account is real: its random key works and the public development key does not', async () => {
    const wrong = storageConnection.replace(
      ACCOUNT_KEY,
      'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==',
    );
    const refused = await QueueServiceClient.fromConnectionString(wrong, { retryOptions: { maxTries: 1 } })
      .getProperties()
      .then(
        () => 0,
        (e: RestError) => e.statusCode ?? -1,
      );
    assert.equal(refused, 403);
    const props = await QueueServiceClient.fromConnectionString(storageConnection).getProperties();
    assert.ok(props);
  });

  test('the start-up banner masks both keys', () => {
    const output = host.output();
    assert.match(output, /AccountKey=\*\*\*/);
    assert.match(output, /SharedAccessKey=\*\*\*/);
    assert.match(output, new RegExp(`AccountName=${ACCOUNT}`), 'the rest of the connection string is shown');
  });

  test('success: a batch goes in over HTTP and completes; status, report, CSV and health answer', async () => {
    const accepted = await post(toNdjson(generate(300, 7, 10)), { 'Idempotency-Key': `sec-${PREFIX}ok` });
    assert.equal(accepted.status, 202, accepted.body);
    const { batchId } = JSON.parse(accepted.body) as { batchId: string };
    await host.until('the batch to complete', 30_000, async () =>
      (JSON.parse((await call(`/api/batches/${batchId}`)).body) as { status: string }).status === 'completed'
        ? true
        : undefined,
    );
    assert.equal((await call(`/api/batches/${batchId}/report`)).status, 200);
    assert.equal((await call(`/api/batches/${batchId}/report?format=csv`)).status, 200);
    assert.equal((await call('/api/health')).status, 200);
    assert.equal(
      (await post(toNdjson(generate(300, 7, 10)), { 'Idempotency-Key': `sec-${PREFIX}ok` })).status,
      202,
      'replayed',
    );
  });

  test('client errors: 400, 404, 413, 415, 422', async () => {
    assert.equal((await post('{"id":"x","note":1}\n{broken')).status, 400);
    assert.equal((await post('[]', invalidOnPurpose({ 'Content-Type': 'application/json' }))).status, 400);
    assert.equal((await post('x', invalidOnPurpose({ 'Idempotency-Key': 'has spaces in it' }))).status, 400);
    assert.equal((await call('/api/batches/..%2F..%2Fbatches', { headers: invalidOnPurpose() })).status, 400);
    assert.equal((await call(`/api/batches/b-${'0'.repeat(20)}`)).status, 404);
    assert.equal((await call('/api/nothing-here', { headers: invalidOnPurpose() })).status, 404);
    assert.equal((await call('/api/batches', { method: 'DELETE', headers: invalidOnPurpose() })).status, 404);
    assert.equal((await post(Buffer.alloc(70_000, 0x20))).status, 413);
    assert.equal(
      (await post(gzipSync(Buffer.alloc(4 * 1024 * 1024, 0x20)), { 'Content-Encoding': 'gzip' })).status,
      413,
    );
    assert.equal((await post('x', invalidOnPurpose({ 'Content-Type': 'text/plain' }))).status, 415);
    assert.equal((await post(Buffer.alloc(10), invalidOnPurpose({ 'Content-Encoding': 'br' }))).status, 415);
    assert.equal(
      (await post(toNdjson(generate(5, 8)), { 'Idempotency-Key': `sec-${PREFIX}ok` })).status,
      422,
      'same key, another body',
    );
    const unfinished = await post(toNdjson(generate(5, 9)));
    const { batchId } = JSON.parse(unfinished.body) as { batchId: string };
    assert.ok([200, 409].includes((await call(`/api/batches/${batchId}/report`)).status));
  });

  test('Storage answering 503: the API says 503 (no internals), the drain error is logged without secrets', async () => {
    proxy.inject('status503', { times: 10_000 });
    const refused = await post(toNdjson(generate(20, 10)));
    assert.equal(refused.status, 503, refused.body);
    assert.equal(refused.headers.get('retry-after'), '5');
    assert.deepEqual(Object.keys(JSON.parse(refused.body) as object).sort(), GENERIC_ERROR_KEYS);
    assert.equal((await call(`/api/batches/b-${'1'.repeat(20)}`)).status, 503);

    // A wake-up while Storage is down: the drain fails and says so.
    const sender = bus.client().createSender(TOPIC);
    try {
      const mark = host.output().length;
      await sender.sendMessages({
        body: { storageAccount: ACCOUNT, queueName: names.inputQueue(0), payloadSize: 1, role: 'input' },
        applicationProperties: { role: 'input' },
      });
      const failed = new RegExp(`${names.inputQueue(0)}[^\\n]*server is busy`, 'i');
      await host.until('the failed drain to be logged', 20_000, () =>
        failed.test(host.output().slice(mark)) ? true : undefined,
      );
    } finally {
      proxy.clear();
      await sender.close();
    }
    assert.ok(proxy.counts().injected.status503 > 0);
  });

  test('drain errors: a foreign queue, a malformed event, a poison pointer', async () => {
    const queues = QueueServiceClient.fromConnectionString(storageConnection);
    await queues
      .getQueueClient(names.inputQueue(1))
      .sendMessage('{"v":1,"batchId":"b-nope","chunk":0,"count":1,"blob":"../../etc/passwd","sha256":"00"}');
    const sender = bus.client().createSender(TOPIC);
    const mark = host.output().length;
    try {
      await sender.sendMessages([
        {
          body: { storageAccount: ACCOUNT, queueName: 'someone-elses-queue', payloadSize: 1, role: 'input' },
          applicationProperties: { role: 'input' },
        },
        {
          body: { storageAccount: ACCOUNT, queueName: '../work-0', role: 'input' },
          applicationProperties: { role: 'input' },
        },
        {
          body: { storageAccount: ACCOUNT, queueName: names.inputQueue(1), payloadSize: 1, role: 'input' },
          applicationProperties: { role: 'input' },
        },
      ]);
    } finally {
      await sender.close();
    }
    await host.until('the three outcomes to be logged', 30_000, () => {
      const seen = host.output().slice(mark);
      return /someone-elses-queue/.test(seen) &&
        /queueName is missing or not a valid queue name/.test(seen) &&
        /moved to poison/.test(seen)
        ? true
        : undefined;
    });
    const poisoned = await queues.getQueueClient(names.poisonQueue(names.inputQueue(1))).peekMessages();
    assert.equal(poisoned.peekedMessageItems.length, 1);
  });

  test('the incoming/ sweep: a bad file name and a bad file are rejected, with reasons, without secrets', async () => {
    const blobs = BlobServiceClient.fromConnectionString(storageConnection);
    const incoming = blobs.getContainerClient(names.container('incoming'));
    await incoming.createIfNotExists();
    await incoming.getBlockBlobClient('bad name!.ndjson').upload('{}', 2);
    await incoming.getBlockBlobClient('broken.ndjson').upload('{nope', 5);
    const rejected = blobs.getContainerClient(names.container('rejected'));
    await host.until('both files to be rejected', 20_000, async () => {
      const got: string[] = [];
      for await (const b of rejected.listBlobsFlat()) got.push(b.name);
      return got.includes('broken.ndjson.error.json') && got.some((n) => n.startsWith('bad name')) ? got : undefined;
    });
  });

  test('bad settings at start-up: the host refuses to start, names the setting, echoes no secret', async () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{ PUSHDRAIN_PARTITIONS: 'many' }, /Invalid setting PUSHDRAIN_PARTITIONS/],
      [
        { StorageConnection: `AccountName=${ACCOUNT};AccountKey=${ACCOUNT_KEY};not-a-pair` },
        /Invalid setting StorageConnection: is not a well-formed connection string/,
      ],
      [
        { StorageConnection: `AccountKey=${ACCOUNT_KEY}` },
        /Invalid setting StorageConnection: connection string has neither AccountName nor BlobEndpoint/,
      ],
      [
        { ServiceBusConnection: `SharedAccessKeyName=Root;SharedAccessKey=${SAS_KEY}` },
        /Invalid setting ServiceBusConnection: connection string has no Endpoint/,
      ],
      [
        { ServiceBusConnection: `Endpoint=:::;SharedAccessKey=${SAS_KEY}` },
        /Invalid setting ServiceBusConnection: Endpoint is not a valid/,
      ],
    ];
    const runs = await Promise.all(cases.map(([extra]) => failedStart(extra)));
    for (const [i, { code, text }] of runs.entries()) {
      assert.equal(code, 1, text);
      assert.match(text, cases[i]![1]);
    }
  });

  test('after a clean stop, nothing the host printed or answered carries a secret', async () => {
    const code = await host.stop(20_000);
    const output = host.output();
    assert.equal(code, 0, output.slice(-2000));
    transcript.push({ where: 'host stdout+stderr', text: output });
    assert.ok(transcript.length >= 25, `${transcript.length} captures`);
    for (const { where, text } of transcript) assertNoSecret(where, text);
    // The paths above really ran: their log lines are in the capture.
    for (const expected of [
      /transient failure/,
      /WorkDetected ignored/,
      /moved to poison/,
      /rejected/,
      /Stopped cleanly/,
    ])
      assert.match(output, expected);
  });
});

describe('secret-bearing inputs, unit by unit', () => {
  const SECRET = `s3cr3t${randomBytes(12).toString('hex')}`;

  test('ConfigError for a connection setting names the setting and never echoes its value', () => {
    const envs: Record<string, string>[] = [
      { StorageConnection: `AccountName=a;AccountKey=${SECRET};garbage` },
      { StorageConnection: `AccountKey=${SECRET}` },
      { StorageConnection: `=${SECRET}` },
      { StorageConnection: `BlobEndpoint=not a url?sig=${SECRET};SharedAccessSignature=sv=1&sig=${SECRET}` },
      { AzureWebJobsStorage: `AccountKey=${SECRET};junk` },
      { StorageConnection__blobServiceUri: `https://a.blob.core.windows.net/?sv=1&sig=${SECRET}` },
      { StorageConnection__blobServiceUri: `::${SECRET}`, StorageConnection__queueServiceUri: `::${SECRET}` },
      { StorageConnection: 'UseDevelopmentStorage=true', ServiceBusConnection: `SharedAccessKey=${SECRET}` },
      {
        StorageConnection: 'UseDevelopmentStorage=true',
        ServiceBusConnection: `Endpoint=sb://x/;SharedAccessKey=${SECRET};broken`,
      },
      {
        StorageConnection: 'UseDevelopmentStorage=true',
        ServiceBusConnection: `Endpoint=::${SECRET};SharedAccessKey=${SECRET}`,
      },
      {
        StorageConnection: 'UseDevelopmentStorage=true',
        ServiceBusConnection__fullyQualifiedNamespace: `Endpoint=sb://x/;SharedAccessKey=${SECRET}`,
      },
    ];
    for (const env of envs) {
      const e = (() => {
        try {
          loadSettings(env);
        } catch (err) {
          return err;
        }
        return assert.fail(`accepted ${Object.keys(env).join(', ')}`);
      })();
      assert.ok(e instanceof ConfigError, String(e));
      assert.match(e.message, /^Invalid setting (StorageConnection|AzureWebJobsStorage|ServiceBusConnection)/);
      assert.ok(!e.message.includes(SECRET), e.message);
      assertNoSecret(e.message, e.message);
    }
  });

  test('errorResponse: 5xx bodies are generic, 4xx bodies are ours, log lines are redacted', () => {
    const logged: string[] = [];
    const ctx = new InvocationContext({
      invocationId: 'inv-1',
      logHandler: (_level, ...args) => logged.push(args.map(String).join(' ')),
    });
    const connection = `DefaultEndpointsProtocol=https;AccountName=a;AccountKey=${SECRET};EndpointSuffix=core.windows.net`;
    const inputs: [unknown, number][] = [
      [new Error(`could not connect with ${connection}`), 500],
      [new TransientError(`GET https://a.blob.core.windows.net/c/b?sv=2024-01-01&sig=${SECRET} timed out`), 503],
      [
        new RestError(`Server busy for https://a.queue.core.windows.net/q?sig=${SECRET}`, {
          statusCode: 503,
          code: 'ServerBusy',
        }),
        503,
      ],
      [
        new RestError(`connect ECONNREFUSED; SharedAccessSignature sr=sb%3A%2F%2Fns&sig=${SECRET}&se=1&skn=Root`, {
          code: 'ECONNREFUSED',
        }),
        503,
      ],
      [
        new RestError(`This request is not authorized: ${connection}`, {
          statusCode: 403,
          code: 'AuthorizationFailure',
        }),
        500,
      ],
      [{ connectionString: `Endpoint=sb://ns/;SharedAccessKeyName=Root;SharedAccessKey=${SECRET}` }, 500],
      [`SharedAccessSignature=sv=1&sig=${SECRET}`, 500],
    ];
    for (const [error, status] of inputs) {
      const res = errorResponse(error, ctx);
      assert.equal(res.status, status, String(error));
      const body = JSON.stringify(res.jsonBody);
      assert.ok(!body.includes(SECRET), body);
      assert.deepEqual(Object.keys(res.jsonBody as object).sort(), GENERIC_ERROR_KEYS);
    }
    assert.equal(logged.length, inputs.length);
    for (const line of logged) {
      assert.ok(!line.includes(SECRET), line);
      assertNoSecret('a log line', line);
    }
    // A 4xx carries the app's own message and details, never a value it was given as a header.
    const key = `order-${SECRET} with a space`;
    const v = errorResponse(
      new ValidationError('Idempotency-Key must be 1-128 characters of A-Z a-z 0-9 . _ : -', {
        code: 'invalid_idempotency_key',
      }),
      ctx,
    );
    assert.ok(!JSON.stringify(v.jsonBody).includes(key));
    assert.equal(
      redactSecrets(`a;AccountKey=${SECRET};b sig=${SECRET}&x SharedAccessKey=${SECRET}`),
      'a;AccountKey=***;b sig=***&x SharedAccessKey=***',
    );
  });
});
