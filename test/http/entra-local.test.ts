/**
 * PUSHDRAIN_AUTH=entra on the local host (a child process, as `npm start -- --auth entra` runs it)
 * with the local issuer: the CLI mints dev tokens, submits and reads with --auth entra, says who it
 * acts as with --verbose (never the token), and names the missing role on a 403. Over real HTTP a
 * forged X-MS-CLIENT-PRINCIPAL gets nowhere.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { EXIT } from '../../tools/cli/exit-codes';
import { type CliRun, type LocalStack, runCli, startLocalStack } from '../support/local-stack';
import { sampleBatch } from '../support/sample-batch';
import { forgedClientPrincipal, type TestIssuer, testIssuer } from '../support/tokens';

let iss: TestIssuer;
let stack: LocalStack;
let dir = '';

before(async () => {
  iss = await testIssuer();
  stack = await startLocalStack(iss.env);
  dir = mkdtempSync(join(tmpdir(), 'pushdrain-entra-'));
});

after(async () => {
  await stack?.stop();
  await iss?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const cli = (args: readonly string[], env: Record<string, string> = {}): Promise<CliRun> =>
  runCli(args, { PUSHDRAIN_URL: stack.host.base, PUSHDRAIN_DATA_DIR: iss.dataDir, PUSHDRAIN_KEY: '', ...env }, 120_000);

async function devToken(name: string, ...roles: string[]): Promise<string> {
  const r = await cli(['dev-token', '--name', name, '--role', ...roles]);
  assert.equal(r.code, 0, r.stderr);
  const token = r.stdout.trim();
  assert.match(token, /^[\w-]+\.[\w-]+\.[\w-]+$/);
  return token;
}

describe('--auth entra against the local host with the local issuer', () => {
  test('submit as alice, follow it, read its report; bob gets 404 for it; a submitter is told the missing role', async () => {
    const file = join(dir, 'batch.ndjson');
    writeFileSync(file, sampleBatch(['t1', 't2', 't3']));
    const alice = await devToken('alice', 'Batches.Submit');
    const bob = await devToken('bob', 'Batches.Submit');

    const submitted = await cli(['--auth', 'entra', '--token', alice, '--verbose', 'submit', file, '--json']);
    assert.equal(submitted.code, 0, `${submitted.stderr}\n${stack.host.output().slice(-2000)}`);
    assert.match(submitted.stderr, /acting as alice \(oid [0-9a-f-]{36}, app [0-9a-f-]+\), roles: Batches\.Submit/);
    assert.ok(!submitted.stderr.includes(alice) && !submitted.stdout.includes(alice), 'the token is never printed');
    const { batchId, final } = JSON.parse(submitted.stdout) as { batchId: string; final: { status: string } };
    assert.equal(final.status, 'completed');
    assert.match(stack.host.output(), new RegExp(`batch ${batchId}: accepted.*submitted by alice \\(oid`));

    const report = await cli(['--auth', 'entra', '--token', alice, '--json', 'report', batchId]);
    assert.equal(report.code, 0, report.stderr);
    assert.equal((JSON.parse(report.stdout) as { submitter: { name: string } }).submitter.name, 'alice');

    const theirs = await cli(['--auth', 'entra', '--token', bob, 'status', batchId]);
    assert.equal(theirs.code, EXIT.notFound, theirs.stderr);

    const queues = await cli(['--auth', 'entra', '--token', alice, 'queues']);
    assert.equal(queues.code, EXIT.auth);
    assert.match(queues.stderr, /HTTP 403: missing app role Batches\.Read/);

    const noToken = await cli(['status', batchId]);
    assert.equal(noToken.code, EXIT.auth);
    assert.match(noToken.stderr, /HTTP 401/);

    const reader = await devToken('rita', 'Batches.Read');
    const all = await cli(['--auth', 'entra', '--token', reader, 'batches', '--json']);
    assert.equal(all.code, 0, all.stderr);
    assert.ok(all.stdout.includes(batchId));
  });

  test('--auth entra without a token or a scope is a usage error that says what to give', async () => {
    const r = await cli(['--auth', 'entra', 'status'], { PUSHDRAIN_API_SCOPE: '', PUSHDRAIN_TOKEN: '' });
    assert.equal(r.code, EXIT.usage, r.stderr);
    assert.match(r.stderr, /--scope/);
  });

  test('over HTTP: a forged X-MS-CLIENT-PRINCIPAL is ignored (401), the health and page shell stay open', async () => {
    const forged = await fetch(`${stack.host.base}/api/ops/status`, {
      headers: { 'x-ms-client-principal': forgedClientPrincipal(), 'x-ms-client-principal-idp': 'aad' },
    });
    assert.equal(forged.status, 401);
    assert.equal(forged.headers.get('www-authenticate'), 'Bearer error="invalid_token"');
    assert.equal((await fetch(`${stack.host.base}/api/health`)).status, 200);
    assert.equal((await fetch(`${stack.host.base}/api/dashboard`)).status, 200);
  });
});
