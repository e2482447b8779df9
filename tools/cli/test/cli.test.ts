/**
 * The `pushdrain` CLI, run as users run it: the real binary as a child process (pipes, not a
 * terminal, so plain output) against the local stack (Azurite, the development broker, the
 * local host as a child). A 200,000-line submit with its progress captured, every command's
 * --json parsed, a rejected file's details and exit code, and `npx pushdrain` from the repo
 * and from an install.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { BlobServiceClient } from '@azure/storage-blob';

import type { BatchStatusBody } from '../../../functions/batch-status-body';
import type { BatchPage } from '../../../shared/batch/batch-pages';
import type { Report } from '../../../shared/billing/report';
import type { Transaction } from '../../../shared/model/transaction';
import { entityNames } from '../../../shared/names';
import type { StatusReport } from '../../../shared/status/status-report';
import {
  CLI,
  type CliRun,
  type LocalStack,
  REPO_ROOT,
  runCli,
  startLocalStack,
  submitHeld,
  wake,
} from '../../../test/support/local-stack';
import { portBelowEphemeral } from '../../../test/support/port-below-ephemeral';
import { spoilChunks } from '../../devstack/spoil-chunks';
import { generate, toNdjson } from '../../testkit/generate';
import { expectedReport } from '../../testkit/oracle';
import { changedLinesOnly, colorEnabled, money, painter, table } from '../output';
import { contentKey, describeRejection, detectFormat } from '../submit';

const LINES = 200_000;
const txns = generate(LINES, 501, 300);
let stack: LocalStack;
let dir = '';
let bigFile = '';
let batchId = '';

const cli = (args: readonly string[], env: Record<string, string> = {}, stdin?: Buffer): Promise<CliRun> =>
  runCli(args, { PUSHDRAIN_URL: stack.host.base, PUSHDRAIN_KEY: 'any-key-works-locally', ...env }, 180_000, stdin);
const json = <T>(r: CliRun): T => {
  assert.equal(r.code, 0, `exit ${r.code}\n${r.stderr}`);
  return JSON.parse(r.stdout) as T;
};
const ANSI = /\x1b\[/;
/** The chunk count the app chose for the big file (set by the submit test, read by those after it). */
let bigChunks = 0;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'pushdrain-cli-'));
  bigFile = join(dir, 'batch.ndjson');
  writeFileSync(bigFile, toNdjson(txns));
  stack = await startLocalStack();
});

after(async () => {
  await stack?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('pushdrain CLI against the local stack', () => {
  test(`submit of a ${LINES.toLocaleString('en-US')}-line file: upload and chunk progress, then the batch id, the totals and where the report is`, async () => {
    const r = await cli(['submit', bigFile, '--poll', '250']);
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}\n${stack.host.output().slice(-2000)}`);
    assert.ok(!ANSI.test(r.stdout) && !ANSI.test(r.stderr), 'plain output off a terminal');
    // Progress is on stderr, one plain line per second and a last one at 100 %.
    assert.match(r.stderr, /batch\.ndjson: [\d.]+ MiB ndjson, [\d.]+ (MiB|KiB) gzip, Idempotency-Key sha256-/);
    const uploads = [...r.stderr.matchAll(/^upload +\[[#-]{20}\] (\d+)% \| ([\d,]+)\/([\d,]+) bytes$/gm)];
    assert.ok(uploads.length >= 1, r.stderr);
    assert.equal(uploads.at(-1)?.[1], '100');
    // The chunk count is the app's choice for the batch's size (docs/DESIGN.md, "Chunk size").
    const accepted = /^accepted: batch \S+, 200,000 transactions in (\d+) chunks$/m.exec(r.stderr);
    assert.ok(accepted, r.stderr);
    const total = Number(accepted[1]);
    assert.ok(total > 1, 'a 200,000-transaction batch is cut into several chunks');
    bigChunks = total;
    const chunks = [...r.stderr.matchAll(/^chunks +\[[#-]{20}\] (\d+)% \| (\d+)\/(\d+) chunks$/gm)]
      .filter((m) => Number(m[3]) === total)
      .map((m) => Number(m[2]));
    assert.ok(chunks.length >= 2, `a line as the wait starts and one at the end:\n${r.stderr}`);
    assert.equal(chunks.at(-1), total);
    assert.deepEqual(
      chunks,
      [...chunks].sort((a, b) => a - b),
      'progress only moves forward',
    );
    // The result is on stdout.
    const m = new RegExp(
      `^completed: batch (\\S+), 200,000 transactions in ${total} chunks, [\\d,.]+ (ms|s) from submission$`,
      'm',
    ).exec(r.stdout);
    assert.ok(m?.[1], r.stdout);
    batchId = m[1];
    assert.match(r.stdout, /^totals: AUD [\d,.-]+ incl\. tax [\d,.-]+ \([\d,]+ tx\) · CAD /m);
    assert.match(
      r.stdout,
      new RegExp(
        `^report: ${stack.host.base}/api/batches/${batchId}/report  \\(CSV: pushdrain report ${batchId} --csv -o ${batchId}\\.csv\\)$`,
        'm',
      ),
    );
    const report = json<Report>(await cli(['report', batchId, '--json']));
    assert.deepEqual(report.totals, expectedReport(txns).totals, 'the totals the app computed are the exact ones');
  });

  test('a re-run of the same content is the same batch (Idempotency-Key from the content), with its status now; --no-wait --json', async () => {
    assert.ok(batchId, 'runs after the submit test');
    const r = await cli(['submit', bigFile, '--no-wait', '--json']);
    const { controlTotals, ...body } = json<{
      batchId: string;
      replayed: boolean;
      transactions: number;
      chunks: number;
      controlTotals?: { transactions: number; bodySha256: string };
    }>(r);
    assert.deepEqual(
      body,
      { batchId, status: 'completed', transactions: LINES, chunks: bigChunks, replayed: true },
      'the batch completed in the first test',
    );
    // The replay answers with the control totals the batch was accepted with (verify checks their sums).
    assert.equal(controlTotals?.transactions, LINES);
    assert.equal(controlTotals?.bodySha256, contentKey(readFileSync(bigFile)).slice('sha256-'.length));
    assert.equal(r.stderr, '', 'no progress with --json');
    // The same data gzip-compressed by the user is the same content, hence the same batch.
    const gz = join(dir, 'batch.ndjson.gz');
    writeFileSync(gz, (await import('node:zlib')).gzipSync(readFileSync(bigFile)));
    assert.equal(json<{ batchId: string }>(await cli(['submit', gz, '--no-wait', '--json'])).batchId, batchId);
  });

  test('status, batches, queues, report and redrive with --json parse; report --csv -o writes the CSV', async () => {
    assert.ok(batchId, 'runs after the submit test');
    const one = json<BatchStatusBody>(await cli(['status', batchId, '--json']));
    assert.deepEqual([one.status, one.chunksDone, one.transactions], ['completed', bigChunks, LINES]);
    const all = json<StatusReport>(await cli(['status', '--json']));
    assert.equal(all.queues.length, 5);
    assert.ok(all.serviceBus.available, 'the development broker answers peeks');
    assert.ok(
      all.serviceBus.available &&
        all.serviceBus.entities.some((e) => e.entity === 'work-detected/Subscriptions/drain' && e.error === undefined),
    );
    const listing = json<BatchPage>(await cli(['batches', '--json']));
    assert.equal(listing.scope, 'all', 'a key holder sees every batch');
    const mine = listing.batches.find((b) => b.batchId === batchId);
    assert.ok(mine && typeof mine.latencyMs === 'number', JSON.stringify(listing));
    const q = json<{ queues: StatusReport['queues']; drains: StatusReport['drains'] }>(await cli(['queues', '--json']));
    assert.deepEqual(
      q.queues.map((x) => x.depth),
      [0, 0, 0, 0, 0],
    );
    const redrive = json<{ moved: number; skipped: number }>(
      await cli(['redrive', '--json', '--admin-key', 'admin-any-key-locally']),
    );
    assert.deepEqual([redrive.moved, redrive.skipped], [0, 0]);

    const csv = join(dir, 'report.csv');
    const w = await cli(['report', batchId, '--csv', '-o', csv]);
    assert.equal(w.code, 0, w.stderr);
    assert.match(w.stderr, /^wrote .*report\.csv \([\d,]+ bytes\)$/m);
    const lines = readFileSync(csv, 'utf8').trimEnd().split('\r\n');
    assert.equal(lines[0], 'account,currency,transactions,charges,refunds,net,tax,total');
    assert.equal(lines.length - 1, expectedReport(txns).rows.length);

    // The human forms: tables and summaries, no escape codes off a terminal.
    const human = await cli(['queues']);
    assert.equal(human.code, 0);
    assert.match(human.stdout, /^queue +depth +oldest +poison +oldest poison +drain here$/m);
    // Drains of the finished batch may still be backing off: their column says so.
    assert.match(
      human.stdout,
      new RegExp(`^${stack.prefix}work-0 +0 +– +0 +– +(–|(running|stopping|starting), \\d+ tasks)$`, 'm'),
    );
    assert.match(human.stdout, /^work-detected\/Subscriptions\/drain +\d+ +0 +0$/m);
    assert.match((await cli(['batches'])).stdout, new RegExp(`^${batchId} +completed +(\\d+)/\\1 +200,000 `, 'm'));
    const system = (await cli(['status'])).stdout;
    assert.match(system, /^batches: 0 open, 1 completed, 0 failed$/m);
    // Right after a batch: no hourly idle rate from a few idle seconds, the count and the idle time instead.
    assert.match(
      system,
      /^storage: .*, (no idle period yet|idle [\d,]+ in \d+ s \(an hourly rate after 10 min of idle\))$/m,
    );
    assert.ok(!ANSI.test(human.stdout));
  });

  test('verify: the batch reconciles with the submitted file (exit 0); a report with one byte changed does not (exit 9)', async () => {
    assert.ok(batchId, 'runs after the submit test');
    const ok = await cli(['verify', batchId, bigFile]);
    assert.equal(ok.code, 0, `${ok.stdout}\n${ok.stderr}`);
    assert.match(ok.stdout, /^currency +type +file count +accepted count +file amount +accepted amount +report$/m);
    assert.doesNotMatch(ok.stdout, /FAIL/);
    assert.match(
      ok.stdout,
      /^ok +file control totals = accepted: 200,000 transactions in the file, 200,000 accepted$/m,
    );
    const status = json<BatchStatusBody>(await cli(['status', batchId, '--json']));
    const digest = status.reportSha256 ?? '';
    assert.match(digest, /^[0-9a-f]{64}$/);
    // The event as a receiver would have saved it once its signature checked out.
    const event = join(dir, 'event.json');
    const asEvent = (reportSha256: string): string =>
      JSON.stringify({ type: 'com.pushdrain.batch.completed', subject: batchId, data: { reportSha256 } });
    writeFileSync(event, asEvent(digest));
    const withEvent = json<{ ok: boolean; checks: { what: string; ok: boolean }[] }>(
      await cli(['verify', batchId, bigFile, '--event', event, '--json']),
    );
    assert.ok(withEvent.ok);
    assert.ok(withEvent.checks.some((c) => c.what === 'report digest = event reportSha256' && c.ok));
    writeFileSync(event, asEvent('0'.repeat(64)));
    assert.equal((await cli(['verify', batchId, '--event', event])).code, 9, 'an event with another digest');

    // Another file (one transaction fewer) does not reconcile either.
    const other = join(dir, 'other.ndjson');
    writeFileSync(other, toNdjson(txns.slice(1)));
    const short = await cli(['verify', batchId, other]);
    assert.equal(short.code, 9, short.stdout);
    assert.match(
      short.stdout,
      /^FAIL file control totals = accepted: 199,999 transactions in the file, 200,000 accepted$/m,
    );

    // One byte of the stored report changed: a digit, so that it is still JSON.
    const blobs = BlobServiceClient.fromConnectionString(stack.azurite.connectionString);
    const blob = blobs
      .getContainerClient(entityNames(stack.prefix, 4).container('reports'))
      .getBlockBlobClient(`${batchId}.json`);
    const original = await blob.downloadToBuffer();
    const changed = Buffer.from(original);
    const at = changed.indexOf('"charges":') + '"charges":'.length;
    changed[at] = changed[at] === 0x31 ? 0x32 : 0x31;
    await blob.upload(changed, changed.length);
    try {
      const bad = await cli(['verify', batchId, bigFile]);
      assert.equal(bad.code, 9, bad.stdout);
      assert.match(bad.stdout, /^FAIL report digest = status reportSha256: /m);
    } finally {
      await blob.upload(original, original.length);
    }
  });

  test('submit - reads stdin; a JSON array is recognised by its first character', async () => {
    const r = await cli(['submit', '-', '--json', '--poll', '200'], {}, Buffer.from(JSON.stringify(txns.slice(0, 50))));
    const body = json<{
      batchId: string;
      transactions: number;
      final: BatchStatusBody;
      totals: unknown[];
      report: string;
    }>(r);
    assert.equal(body.transactions, 50);
    assert.equal(body.final.status, 'completed');
    assert.deepEqual(body.totals, expectedReport(txns.slice(0, 50)).totals);
    assert.equal(body.report, `${stack.host.base}/api/batches/${body.batchId}/report`);
  });

  test("README's first batch: sample writes a file that submit takes to a report equal to the oracle's; a count past a batch's limit is a usage error", async () => {
    const file = join(dir, 'batch.ndjson');
    const written = await cli(['sample', '25000', '--seed', '7', '-o', file]);
    assert.equal(written.code, 0, written.stderr);
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    assert.equal(lines.length, 25_000);
    const sent = lines.map((l) => JSON.parse(l) as Transaction);
    assert.equal(new Set(sent.map((t) => t.id)).size, 25_000, 'ids unique across the generator blocks');
    const r = await cli(['submit', file, '--json', '--poll', '200']);
    const body = json<{ transactions: number; final: BatchStatusBody; totals: unknown[] }>(r);
    assert.equal(body.transactions, 25_000);
    assert.equal(body.final.status, 'completed');
    assert.deepEqual(body.totals, expectedReport(sent).totals);
    const same = await cli(['sample', '25000', '--seed', '7']);
    assert.equal(same.stdout, readFileSync(file, 'utf8'), 'the same seed writes the same file, to stdout without -o');
    const tooMany = await cli(['sample', '1000001']);
    assert.equal(tooMany.code, 2, tooMany.stderr);
    assert.match(tooMany.stderr, /count must be 1 to 1000000/);
  });

  test('a rejected file exits 3 with the validation details, readable and as JSON', async () => {
    const bad = join(dir, 'bad.ndjson');
    const good = JSON.stringify(txns[0]);
    writeFileSync(
      bad,
      [good, JSON.stringify({ ...txns[1], amount: -5 }), JSON.stringify({ ...txns[2], currency: 'euro' })].join('\n'),
    );
    const r = await cli(['submit', bad]);
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stderr, /^pushdrain: rejected \(HTTP 400, invalid_batch\): /m);
    assert.match(r.stderr, /^ {2}line 2, amount: /m);
    assert.match(r.stderr, /^ {2}line 3, currency: /m);
    assert.equal(r.stdout, '');
    const j = await cli(['submit', bad, '--json']);
    assert.equal(j.code, 3);
    const body = JSON.parse(j.stdout) as {
      error: string;
      details: { line: number; field: string }[];
      httpStatus: number;
      exitCode: number;
    };
    assert.equal(body.error, 'invalid_batch');
    assert.deepEqual(
      body.details.map((d) => [d.line, d.field]),
      [
        [2, 'amount'],
        [3, 'currency'],
      ],
    );
    assert.deepEqual([body.httpStatus, body.exitCode], [400, 3]);
  });

  test('exit codes: usage 2, unknown batch 5, unreachable app 7; not built, not found and help are clear', async () => {
    const usage = await cli(['bogus']);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /unknown command 'bogus'/);
    assert.equal((await cli(['submit'])).code, 2, 'a missing argument');
    assert.equal((await cli(['redrive', '--max', 'ten'])).code, 2);
    const missing = await cli(['status', 'b-not-a-batch']);
    assert.equal(missing.code, 5);
    assert.match(missing.stderr, /HTTP 404: no such batch/);
    // A port nothing listens on, and that no port-0 listener of another test file can take meanwhile.
    const closed = await portBelowEphemeral();
    const down = await cli(['status', '--url', `http://127.0.0.1:${closed}`]);
    assert.equal(down.code, 7);
    assert.match(down.stderr, new RegExp(`cannot reach http://127\\.0\\.0\\.1:${closed}: ECONNREFUSED`));
    const help = await cli(['--help']);
    assert.equal(help.code, 0);
    for (const c of ['submit', 'status', 'report', 'batches', 'queues', 'redrive'])
      assert.match(help.stdout, new RegExp(`^ {2}${c}\\b`, 'm'));
    assert.equal((await cli(['report', 'b-x', '--json'])).code, 5);
  });

  test('a report that is not ready exits 6 (events held back by the broker, so the batch waits)', async () => {
    stack.bus.broker.faults.serverBusy(1000);
    try {
      const small = join(dir, 'small.json');
      writeFileSync(small, JSON.stringify(txns.slice(0, 10)));
      const accepted = json<{ batchId: string; status: string }>(
        await cli(['submit', small, '--no-wait', '--json', '--no-idempotency']),
      );
      const r = await cli(['report', accepted.batchId]);
      assert.equal(r.code, 6, r.stderr);
      assert.match(r.stderr, new RegExp(`batch ${accepted.batchId} is accepted: no report yet`));
      const listed = json<BatchPage>(await cli(['batches', '--json'])).batches;
      assert.equal(listed.find((b) => b.batchId === accepted.batchId)?.status, 'accepted');
    } finally {
      stack.bus.broker.faults.reset();
    }
  });

  test('report of a failed batch says why (its error, its failed chunks) and exits 4, readable and as JSON', async () => {
    const { batchId: failed } = await submitHeld(stack, toNdjson(txns.slice(0, 10)));
    // What README tells a newcomer to run to see the poison path: a spoiled chunk fails its checksum.
    const blobs = BlobServiceClient.fromConnectionString(stack.azurite.connectionString);
    assert.deepEqual(await spoilChunks({ blobs, batchId: failed, prefix: stack.prefix }), [0]);
    await wake(stack, entityNames(stack.prefix, 4).inputQueues());
    let status = '';
    for (let i = 0, deadline = Date.now() + 60_000; i < 600 && Date.now() < deadline && status !== 'failed'; i++) {
      status = json<BatchStatusBody>(await cli(['status', failed, '--json'])).status;
      if (status !== 'failed') await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(status, 'failed', stack.host.output().slice(-3000));
    const r = await cli(['report', failed]);
    assert.equal(r.code, 4, r.stderr);
    assert.match(
      r.stderr,
      new RegExp(
        `batch ${failed} failed: 1 of 1 chunks failed: chunk 0: chunk blob checksum mismatch; it has no report\\. After fixing the cause: pushdrain redrive --batch ${failed}`,
      ),
    );
    assert.doesNotMatch(r.stderr, /not finished|no report yet/);
    const asJson = await cli(['report', failed, '--json']);
    assert.equal(asJson.code, 4);
    const body = JSON.parse(asJson.stdout) as { error: string; message: string; exitCode: number };
    assert.equal(body.error, 'batch_failed');
    assert.equal(body.exitCode, 4);
    assert.match(body.message, /chunk blob checksum mismatch/);
  });

  test('npx pushdrain runs the bin from the repo, and from an install of the package', () => {
    const repo = spawnSync('npx', ['--offline', 'pushdrain', '--help'], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(repo.status, 0, repo.stderr);
    assert.match(repo.stdout, /^Usage: pushdrain \[options\] \[command\]/m);
    const project = mkdtempSync(join(tmpdir(), 'pushdrain-install-'));
    try {
      writeFileSync(
        join(project, 'package.json'),
        JSON.stringify({ name: 'ops-tools', version: '1.0.0', private: true }),
      );
      const install = spawnSync('npm', ['install', '--offline', '--no-save', '--no-audit', '--no-fund', REPO_ROOT], {
        cwd: project,
        encoding: 'utf8',
        timeout: 120_000,
      });
      assert.equal(install.status, 0, install.stderr);
      const run = spawnSync('npx', ['--offline', 'pushdrain', '--version'], {
        cwd: project,
        encoding: 'utf8',
        timeout: 60_000,
      });
      assert.equal(run.status, 0, run.stderr);
      assert.equal(
        run.stdout.trim(),
        (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version,
      );
    } finally {
      rmSync(project, { recursive: true, force: true });
    }
    assert.ok(CLI.endsWith(join('tools', 'cli', 'pushdrain.js')));
  });
});

describe('CLI output rules', () => {
  const tty = { isTTY: true } as NodeJS.WriteStream;
  const pipe = { isTTY: false } as NodeJS.WriteStream;

  test('colour only on a terminal, never with NO_COLOR or TERM=dumb', () => {
    assert.equal(colorEnabled(tty, {}), true);
    assert.equal(colorEnabled(tty, { NO_COLOR: '1' }), false);
    assert.equal(colorEnabled(tty, { TERM: 'dumb' }), false);
    assert.equal(colorEnabled(pipe, {}), false);
    assert.equal(painter(pipe)('red', 'x'), 'x');
  });

  test('off a terminal a progress line is written when it changes, or after 10 s of the same', () => {
    const written: string[] = [];
    let t = 0;
    const out = changedLinesOnly(
      { isTTY: false, write: (c: string) => written.push(c) } as unknown as NodeJS.WriteStream,
      10_000,
      () => t,
    );
    for (const line of ['a 0%', 'a 0%', 'a 50%']) out.write(`${line}\n`);
    out.write('a 5');
    out.write('0%\n\n');
    t = 10_000;
    out.write('a 50%\n');
    assert.deepEqual(written, ['a 0%\n', 'a 50%\n', 'a 50%\n']);
  });

  test('formats, keys and tables', () => {
    assert.equal(detectFormat('a.json', Buffer.from('')), 'json');
    assert.equal(detectFormat('a.jsonl.gz', Buffer.from('[')), 'ndjson');
    assert.equal(detectFormat('', Buffer.from('  \n[{"id":1}]')), 'json');
    assert.equal(detectFormat('data.txt', Buffer.from('{"id":1}\n')), 'ndjson');
    assert.equal(
      contentKey(Buffer.from('abc')),
      'sha256-ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    );
    assert.ok(contentKey(Buffer.alloc(1)).length <= 128, 'fits the Idempotency-Key limit');
    assert.equal(money(123456, 'EUR'), '1,234.56');
    assert.equal(money(123456, 'JPY'), '123,456');
    assert.equal(
      table(
        ['a', 'n'],
        [
          ['x', '1'],
          ['\x1b[31myy\x1b[0m', '22'],
        ],
        [1],
      ),
      'a    n\nx    1\n\x1b[31myy\x1b[0m  22',
    );
    const details = Array.from({ length: 25 }, (_, i) => ({ line: i + 1, field: 'id', message: 'bad' }));
    const lines = describeRejection({ error: 'invalid_batch', message: '25 errors', details }, 400);
    assert.equal(lines.length, 22);
    assert.equal(lines.at(-1), '  … and 5 more');
  });
});
