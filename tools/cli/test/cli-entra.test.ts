/**
 * The CLI as a submitter uses it with `--auth entra` (a dev token of the local issuer) against the
 * local host as `npm start -- --auth entra` runs it, off a terminal: what it prints and in which
 * order, which route each command reads, and what the host logs and announces meanwhile.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import type { BatchPage } from '../../../shared/batch/batch-pages';
import { invalidOnPurpose } from '../../../test/support/invalid-on-purpose';
import { type CliRun, type LocalStack, runCli, startLocalStack } from '../../../test/support/local-stack';
import { type TestIssuer, testIssuer } from '../../../test/support/tokens';
import { generate, toNdjson } from '../../testkit/generate';
import { EXIT } from '../exit-codes';
import { describeRejection } from '../submit';

let iss: TestIssuer;
let stack: LocalStack;
let dir = '';
let alice = '';

before(async () => {
  iss = await testIssuer();
  stack = await startLocalStack({ ...iss.env, PUSHDRAIN_CHUNK_SIZE: '500' });
  dir = mkdtempSync(join(tmpdir(), 'pushdrain-cli-entra-'));
  alice = await iss.token('alice', ['Batches.Submit']);
});

after(async () => {
  await stack?.stop();
  await iss?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const cli = (args: readonly string[]): Promise<CliRun> =>
  runCli(['--auth', 'entra', ...args], { PUSHDRAIN_URL: stack.host.base, PUSHDRAIN_KEY: '', PUSHDRAIN_TOKEN: alice });

describe('pushdrain --auth entra as a submitter (Batches.Submit only)', () => {
  let file = '';
  let batchId = '';
  let chunks = 0;

  test('submit --verbose: who it acts as comes first, before any progress; the totals say the total includes tax', async () => {
    file = join(dir, 'batch.ndjson');
    writeFileSync(file, toNdjson(generate(4_000, 3901, 40)));
    const r = await cli(['--verbose', 'submit', file, '--poll', '200']);
    assert.equal(r.code, 0, `${r.stderr}\n${stack.host.output().slice(-2000)}`);
    const lines = r.stderr.split('\n');
    assert.match(lines[0] ?? '', /^acting as alice \(oid /, r.stderr);
    assert.ok(
      lines.findIndex((l) => l.startsWith('upload ')) > 0,
      `the upload bar after the sign-in line:\n${r.stderr}`,
    );
    const m = /^completed: batch (\S+), 4,000 transactions in (\d+) chunks/m.exec(r.stdout);
    assert.ok(m?.[1] && m[2], r.stdout);
    batchId = m[1];
    chunks = Number(m[2]);
    assert.ok(chunks > 1);
    // "AUD 1,234.56 incl. tax 123.45 (123 tx)": the first figure is the total, tax included.
    assert.match(r.stdout, /^totals: AUD [\d,.-]+ incl\. tax [\d,.-]+ \([\d,]+ tx\) · CAD /m);
  });

  test('a re-submit of the same file (idempotent) draws its real progress from the start: no 0 % bar', async () => {
    assert.ok(batchId, 'runs after the submit test');
    const r = await cli(['submit', file, '--poll', '200']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, new RegExp(`^already submitted \\(same content\\): batch ${batchId}, `, 'm'));
    const bars = [...r.stderr.matchAll(/^chunks +\[[#-]{20}\] (\d+)% \| (\d+)\/(\d+) chunks$/gm)].map((b) => b[2]);
    assert.deepEqual(bars, [String(chunks)], `one bar, at ${chunks}/${chunks}:\n${r.stderr}`);
  });

  test('batches lists its own batches from GET /api/batches (scope own), readable and as JSON', async () => {
    assert.ok(batchId, 'runs after the submit test');
    const bob = await iss.token('bob', ['Batches.Submit']);
    const theirs = await fetch(`${stack.host.base}/api/batches`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-ndjson', Authorization: `Bearer ${bob}` },
      body: toNdjson(generate(3, 3902, 2)),
    });
    assert.equal(theirs.status, 202);
    const bobs = ((await theirs.json()) as { batchId: string }).batchId;

    const human = await cli(['batches']);
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, /^your batches, newest first \(1 shown\):$/m);
    assert.match(human.stdout, new RegExp(`^${batchId} +completed +${chunks}/${chunks} +4,000 `, 'm'));
    assert.ok(!human.stdout.includes(bobs), 'not another submitter’s batch');

    const asJson = await cli(['batches', '--json', '--limit', '5']);
    assert.equal(asJson.code, 0, asJson.stderr);
    const page = JSON.parse(asJson.stdout) as BatchPage;
    assert.equal(page.scope, 'own');
    assert.deepEqual(
      page.batches.map((b) => b.batchId),
      [batchId],
    );
  });

  test('queues needs Batches.Read: the error names the command the user ran, not the route it reads', async () => {
    const r = await cli(['queues']);
    assert.equal(r.code, EXIT.auth, r.stderr);
    assert.match(r.stderr, /^pushdrain: queues: HTTP 403: missing app role Batches\.Read/m);
    const s = await cli(['status']);
    assert.match(s.stderr, /^pushdrain: status: HTTP 403: /m);
  });

  test('a refused submission is one line in the host log, as an accepted one is', async () => {
    const bad = join(dir, 'bad.ndjson');
    writeFileSync(bad, '{"id":"t1"}\n{"id":');
    const r = await cli(['submit', bad, '--no-idempotency']);
    assert.equal(r.code, EXIT.rejected, r.stderr);
    // The field-less detail has no empty slot for a field.
    assert.match(r.stderr, /^ {2}line 2: malformed JSON/m);
    await stack.host.until('the refusal in the log', 30_000, () =>
      /batch refused: HTTP 400 invalid_batch: the batch has \d+ problems?; first: line 1, \w+: /.test(
        stack.host.output(),
      )
        ? true
        : undefined,
    );
    const empty = await fetch(`${stack.host.base}/api/batches`, {
      method: 'POST',
      headers: invalidOnPurpose({ 'Content-Type': 'application/x-ndjson' }),
      body: '',
    });
    assert.equal(empty.status, 401);
    await stack.host.until('the 401 in the log', 30_000, () =>
      /batch refused: HTTP 401 \w+: a bearer token is required/.test(stack.host.output()) ? true : undefined,
    );
  });
});

describe('npm start -- --auth entra: the banner', () => {
  test('says what is checked in this mode, names the roles of each route, and lists the routes sorted', () => {
    const out = stack.host.output();
    assert.doesNotMatch(out, /any key or none/, 'keys are not what this mode checks');
    assert.match(
      out,
      /^ {2}HTTP +\S+\/api {2}\(PUSHDRAIN_AUTH=entra: the app requires a bearer token with one of the roles shown; function keys are not used\)$/m,
    );
    const routes = [...out.matchAll(/^ {13}([A-Z,]+) +http:\/\/\S+?\/(api\/\S*) {2}\[(\w+), ([^\]]+)\]$/gm)].map(
      (m) => ({ methods: m[1] ?? '', path: m[2] ?? '', fn: m[3] ?? '', who: m[4] ?? '' }),
    );
    assert.ok(routes.length >= 10, out.slice(0, 3000));
    assert.deepEqual(
      routes.filter((r) => /auth /.test(r.who)),
      [],
      'every route says who may call it in this mode (a route without an entry in FUNCTION_ACCESS shows its platform level)',
    );
    const who = (fn: string): string | undefined => routes.find((r) => r.fn === fn)?.who;
    assert.equal(who('opsRedrive'), 'token: Operations.Admin');
    assert.equal(who('postBatch'), 'token: Batches.Submit');
    assert.equal(who('listBatches'), 'token: Batches.Read or Batches.Submit');
    assert.equal(who('health'), 'open: no credential');
    assert.deepEqual(
      routes,
      [...routes].sort((a, b) => a.path.localeCompare(b.path) || a.methods.localeCompare(b.methods)),
      'sorted by path, then method',
    );
  });
});

describe('CLI rejection lines', () => {
  test('a detail without a field prints no empty field; one without a line says request', () => {
    assert.deepEqual(
      describeRejection(
        {
          error: 'invalid_batch',
          message: 'the batch has 2 problems',
          details: [
            { line: 3, field: '', message: 'malformed JSON: x' },
            { line: 4, field: 'amount', message: 'must be an integer' },
          ],
        },
        400,
      ),
      [
        'rejected (HTTP 400, invalid_batch): the batch has 2 problems',
        '  line 3: malformed JSON: x',
        '  line 4, amount: must be an integer',
      ],
    );
  });
});
