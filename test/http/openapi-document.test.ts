/**
 * The OpenAPI document (static/openapi.json) against the app: the routes the Functions host would
 * receive (captured in a child process by tools/devstack/host/print-registrations) are exactly the
 * documented ones; the app serves the document itself; and the checker that
 * test/support/openapi-preload runs over every request and response refuses what the document
 * does not say, a request marked invalid on purpose included when it is valid.
 */
import assert from 'node:assert/strict';
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';

import { HttpRequest } from '@azure/functions';

import { getOpenApiDocument } from '../../functions/openapi-http';
import { BATCH_ID_PATTERN, isValidBatchId } from '../../shared/layout';
import { type ObservedRequest, OPENAPI_PATH, OpenApiContract } from '../support/openapi-contract';
import { repoRoot } from '../support/repo';

interface Route {
  functionName: string;
  template: string;
  methods: string[];
  authLevel: string;
}

function registeredRoutes(): Route[] {
  const root = repoRoot();
  const run = spawnSync(process.execPath, [join(root, 'dist/tools/devstack/host/print-registrations.js')], {
    cwd: root,
    encoding: 'utf8',
    timeout: 30_000,
  });
  assert.equal(run.status, 0, run.stderr);
  return (JSON.parse(run.stdout) as { routes: Route[] }).routes;
}

const accepted = {
  method: 'POST',
  path: '/api/batches',
  status: 202,
  headers: { 'content-type': 'application/json', location: '/api/batches/b-1' },
  body: JSON.stringify({ batchId: 'b-1', status: 'accepted', transactions: 2, chunks: 1 }),
};

const transaction = {
  id: 't-1',
  account: 'a-1',
  timestamp: '2026-11-20T10:00:00Z',
  type: 'charge',
  amount: 100,
  currency: 'EUR',
};

const submit: ObservedRequest = {
  method: 'POST',
  path: '/api/batches',
  query: new URLSearchParams(),
  headers: { 'content-type': 'application/json' },
  body: Buffer.from(JSON.stringify([transaction])),
};

/** Runs `script` in a child with the preload, against a server that answers 202 to anything. */
function withPreload(script: string): SpawnSyncReturns<string> {
  const root = repoRoot();
  const server = `
    const { createServer } = require('node:http');
    const seen = [];
    const server = createServer((req, res) => {
      seen.push(req.headers);
      res.writeHead(404).end();
    });
    server.listen(0, '127.0.0.1', async () => {
      const base = 'http://127.0.0.1:' + server.address().port;
      ${script}
      server.close();
    });`;
  return spawnSync(process.execPath, ['--require', join(root, 'dist/test/support/openapi-preload.js'), '-e', server], {
    cwd: root,
    encoding: 'utf8',
    timeout: 30_000,
  });
}

describe('OpenAPI document', () => {
  test('every registered HTTP route is documented, and every documented route is registered', () => {
    const registered = registeredRoutes()
      .flatMap((r) => r.methods.map((m) => `${m} /${r.template}`))
      .sort();
    assert.ok(registered.length >= 10, registered.join(', '));
    const documented = new OpenApiContract().operations().sort();
    assert.deepEqual(
      registered.filter((r) => !documented.includes(r)),
      [],
      'registered but not in static/openapi.json',
    );
    assert.deepEqual(
      documented.filter((d) => !registered.includes(d)),
      [],
      'in static/openapi.json but not registered',
    );
  });

  test("the document's batch id is the app's one pattern (shared/layout.ts)", () => {
    const doc = JSON.parse(readFileSync(OPENAPI_PATH, 'utf8')) as {
      components: { schemas: { BatchId: { pattern: string } } };
    };
    assert.equal(doc.components.schemas.BatchId.pattern, `^${BATCH_ID_PATTERN}$`);
    for (const id of ['b-1', 'k-' + 'a'.repeat(32), 'a'.repeat(64)]) assert.ok(isValidBatchId(id), id);
    for (const id of ['', '-b', 'B-1', '../x', 'a/b', 'a'.repeat(65)]) assert.ok(!isValidBatchId(id), id);
  });
  test('GET /api/openapi.json serves the document kept in the repo, with an ETag that revalidates to 304', () => {
    const file = readFileSync(join(repoRoot(), OPENAPI_PATH), 'utf8');
    const url = 'http://localhost/api/openapi.json';
    // No app, no settings, no Storage: the handler reads the shipped file only.
    const first = getOpenApiDocument(new HttpRequest({ method: 'GET', url }));
    assert.equal(first.status, 200);
    assert.equal(first.body, file);
    const headers = first.headers as Record<string, string>;
    assert.equal(headers['Content-Type'], 'application/json');
    assert.match(headers.ETag ?? '', /^"[A-Za-z0-9_-]+"$/);
    const again = getOpenApiDocument(
      new HttpRequest({ method: 'GET', url, headers: { 'if-none-match': headers.ETag ?? '' } }),
    );
    assert.equal(again.status, 304);
    assert.equal(again.body, undefined);
    const route = registeredRoutes().find((r) => r.template === 'api/openapi.json');
    assert.equal(route?.authLevel, 'anonymous');
  });

  test('the checker passes a documented answer and refuses an undocumented status, field or header', () => {
    const contract = new OpenApiContract();
    assert.deepEqual(contract.check(accepted), []);
    assert.deepEqual(contract.check({ ...accepted, status: 201 }), ['POST /api/batches does not document status 201']);
    const extra = JSON.stringify({ ...(JSON.parse(accepted.body) as object), queue: 'work-0' });
    assert.match(contract.check({ ...accepted, body: extra }).join(), /additional properties \(queue\)/);
    assert.match(
      contract.check({ ...accepted, headers: { ...accepted.headers, etag: '"x"' } }).join(),
      /header etag is not documented/,
    );
    assert.match(
      contract.check({ ...accepted, headers: { 'content-type': 'application/json' } }).join(),
      /required header Location is missing/,
    );
    assert.match(
      contract.check({ ...accepted, headers: { ...accepted.headers, 'content-type': 'text/plain' } }).join(),
      /Content-Type text\/plain is not one of application\/json/,
    );
    // The host's own answer, to an unknown route and to a method the route lacks alike: an empty 404.
    const empty = { method: 'GET', path: '/api/nowhere', status: 404, headers: {}, body: '' };
    assert.deepEqual(contract.check(empty), []);
    assert.deepEqual(contract.check({ ...empty, method: 'DELETE', path: '/api/batches/b-1' }), []);
    assert.match(
      contract
        .check({
          ...empty,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ error: 'not_found', message: 'no such route' }),
        })
        .join(),
      /a body where none is documented/,
    );
    assert.match(
      contract.check({ ...empty, status: 200, headers: { 'content-type': 'application/json' }, body: '{}' }).join(),
      /is not in the document/,
    );
    assert.match(
      contract.check({ ...empty, method: 'DELETE', path: '/api/batches/b-1', status: 405 }).join(),
      /DELETE \/api\/batches\/\{batchId\} is not in the document \(answered 405\)/,
    );
  });

  test('the preload fails the process on a mismatch, even when the test swallows the rejection', () => {
    const root = repoRoot();
    // A server that answers /api/health with a body the document does not allow; the script
    // catches the rejection, as a test expecting an error would, and exits on its own.
    const script = `
      const { createServer } = require('node:http');
      const server = createServer((req, res) => res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"status":"ok"}'));
      server.listen(0, '127.0.0.1', async () => {
        const url = 'http://127.0.0.1:' + server.address().port + '/api/health';
        try { await fetch(url); console.log('resolved'); } catch (e) { console.log('rejected ' + e.name); }
        server.close();
      });`;
    const run = spawnSync(
      process.execPath,
      ['--require', join(root, 'dist/test/support/openapi-preload.js'), '-e', script],
      { cwd: root, encoding: 'utf8', timeout: 30_000 },
    );
    assert.equal(run.stdout.trim(), 'rejected OpenApiMismatch');
    assert.match(
      run.stderr,
      /GET \/api\/health → 200 does not match static\/openapi.json: body \/ must have required property/,
    );
    assert.match(run.stderr, /1 response\(s\) did not match/);
    assert.equal(run.status, 1);
  });

  test('the request checker passes a documented request and refuses an undocumented path, parameter, media type or body', () => {
    const contract = new OpenApiContract();
    assert.deepEqual(contract.checkRequest(submit), []);
    const ndjson = { ...submit, headers: { 'content-type': 'application/jsonl' }, body: Buffer.from('{}\n') };
    assert.deepEqual(contract.checkRequest(ndjson), [], 'every accepted NDJSON media type is documented');
    const gzipped = { ...submit, headers: { ...submit.headers, 'content-encoding': 'gzip' } };
    assert.deepEqual(contract.checkRequest({ ...gzipped, body: gzipSync(submit.body!) }), []);
    assert.deepEqual(contract.checkRequest({ ...gzipped, body: Buffer.from('not gzip') }), [
      'the body is not valid gzip',
    ]);
    assert.match(contract.checkRequest({ ...submit, body: Buffer.from('[]') }).join(), /body \/ must NOT have fewer/);
    assert.match(
      contract.checkRequest({ ...submit, body: Buffer.from(JSON.stringify([{ ...transaction, amount: 0 }])) }).join(),
      /body \/0\/amount must be >= 1/,
    );
    assert.deepEqual(contract.checkRequest({ ...submit, body: Buffer.alloc(0) }), ['the required body is missing']);
    assert.match(
      contract.checkRequest({ ...submit, headers: { 'content-type': 'text/plain' } }).join(),
      /Content-Type text\/plain is not one of application\/json, application\/x-ndjson/,
    );
    assert.match(
      contract.checkRequest({ ...submit, headers: { ...submit.headers, 'idempotency-key': 'has space' } }).join(),
      /header parameter Idempotency-Key/,
    );
    const get = { method: 'GET', query: new URLSearchParams(), headers: {}, body: Buffer.alloc(0) };
    assert.deepEqual(
      contract.checkRequest({ ...get, path: '/api/batches', query: new URLSearchParams('limit=5') }),
      [],
    );
    assert.deepEqual(contract.checkRequest({ ...get, path: '/api/batches', query: new URLSearchParams('code=k') }), []);
    assert.match(
      contract.checkRequest({ ...get, path: '/api/batches', query: new URLSearchParams('limit=500') }).join(),
      /query parameter limit: \/ must be <= 100/,
    );
    assert.deepEqual(contract.checkRequest({ ...get, path: '/api/batches', query: new URLSearchParams('x=1') }), [
      'query parameter x is not documented',
    ]);
    assert.match(contract.checkRequest({ ...get, path: '/api/batches/B-1' }).join(), /path parameter batchId/);
    assert.match(contract.checkRequest({ ...get, path: '/api/batches/%E0%A4%A' }).join(), /malformed percent-encoding/);
    assert.deepEqual(contract.checkRequest({ ...get, path: '/api/nowhere' }), ['/api/nowhere is not in the document']);
    assert.deepEqual(contract.checkRequest({ ...get, method: 'DELETE', path: '/api/batches/b-1' }), [
      'DELETE /api/batches/{batchId} is not in the document',
    ]);
    const redrive = { ...submit, path: '/api/ops/redrive' };
    assert.deepEqual(contract.checkRequest({ ...redrive, body: Buffer.from('{"queue":"work-3","max":10}') }), []);
    assert.deepEqual(
      contract.checkRequest({ ...redrive, body: Buffer.alloc(0) }),
      [],
      'an empty redrive is every queue',
    );
    assert.match(contract.checkRequest({ ...redrive, body: Buffer.from('{"max":0}') }).join(), /max must be >= 1/);
    assert.match(
      contract.checkRequest({ ...redrive, body: Buffer.from('{"max":100001}') }).join(),
      /max must be <= 100000/,
    );
    assert.match(
      contract.checkRequest({ ...redrive, body: Buffer.from('{"queue":"other"}') }).join(),
      /queue must match/,
    );
  });

  test('the preload refuses an undocumented request, and one marked invalid on purpose that is valid', () => {
    const run = withPreload(`
      const mark = { 'x-pushdrain-invalid-on-purpose': '1' };
      for (const [name, path, headers] of [
        ['unmarked', '/api/nowhere', {}],
        ['marked', '/api/nowhere', mark],
        ['marked but valid', '/api/batches/b-1', mark],
      ]) {
        try { const res = await fetch(base + path, { headers }); console.log(name + ' ' + res.status); }
        catch (e) { console.log(name + ' ' + e.name); }
      }
      console.log('mark sent: ' + seen.some((h) => 'x-pushdrain-invalid-on-purpose' in h));`);
    assert.deepEqual(run.stdout.trim().split('\n'), [
      'unmarked OpenApiMismatch',
      'marked 404',
      'marked but valid OpenApiMismatch',
      'mark sent: false',
    ]);
    assert.match(
      run.stderr,
      /request GET \/api\/nowhere does not match static\/openapi.json: \/api\/nowhere is not in the document/,
    );
    assert.match(
      run.stderr,
      /GET \/api\/batches\/b-1 is marked invalid on purpose .* but matches static\/openapi.json/,
    );
    assert.equal(run.status, 1);
  });
});
