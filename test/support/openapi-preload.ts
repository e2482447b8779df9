/**
 * Loaded into every test process (`node --require`, see scripts/run-tests.mjs): every response the
 * tests receive from pushdrain's API is held against the OpenAPI document (openapi-contract.ts).
 * Two ways in: fetch to a loopback `/api/…` URL (a host the test started), and the HTTP handlers
 * of functions/ called directly (test/support/invoke and the access tests do). A mismatch is
 * thrown into the caller's await, so that test fails; it is also printed at once, and again when
 * the process exits with exit code 1, so a test that expected a rejection cannot swallow it.
 * PUSHDRAIN_OPENAPI_CHECK=off turns it off (to tell a contract failure from another).
 */
import Module from 'node:module';

import { type ObservedResponse, OpenApiContract } from './openapi-contract';

export class OpenApiMismatch extends Error {
  override readonly name = 'OpenApiMismatch';
}

const mismatches: string[] = [];
let contract: OpenApiContract | undefined;

/**
 * Loaded when a process first calls the API (most test files never do), before the answer
 * arrives: loading ajv and the document takes ~200 ms, which must not sit between an answer and
 * what the test does next (local-crash kills the host right after a 202).
 */
function theContract(): OpenApiContract {
  contract ??= new OpenApiContract();
  return contract;
}

function verify(r: ObservedResponse): void {
  const problems = theContract().check(r);
  if (problems.length === 0) return;
  fail(`${r.method} ${r.path} → ${r.status} does not match static/openapi.json: ${problems.join('; ')}`);
}

function fail(text: string): never {
  mismatches.push(text);
  process.stderr.write(`OpenAPI mismatch: ${text}\n`);
  throw new OpenApiMismatch(text);
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

function installFetch(): void {
  const original = globalThis.fetch;
  globalThis.fetch = async function checkedFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (!LOOPBACK.has(url.hostname) || !url.pathname.startsWith('/api/')) return original(input, init);
    theContract();
    const res = await original(input, init);
    const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
    let body: string;
    try {
      body = method === 'HEAD' ? '' : await res.clone().text();
    } catch {
      // The connection broke while the body came: there is no whole response to hold.
      return res;
    }
    const headers: Record<string, string> = {};
    res.headers.forEach((v, k) => (headers[k.toLowerCase()] = v));
    verify({ method, path: url.pathname, status: res.status, headers, body });
    return res;
  };
}

interface ResponseInitLike {
  status?: number;
  headers?: Record<string, string> | Headers | [string, string][];
  body?: unknown;
  jsonBody?: unknown;
}

function observed(method: string, path: string, init: ResponseInitLike): ObservedResponse {
  const headers: Record<string, string> = {};
  new Headers(init.headers).forEach(
    (v, k) => (headers[k.toLowerCase()] = v),
  );
  let body = '';
  if (init.jsonBody !== undefined) {
    body = JSON.stringify(init.jsonBody);
    // As HttpResponse does for a jsonBody without one.
    headers['content-type'] ??= 'application/json';
  } else if (typeof init.body === 'string') body = init.body;
  else if (Buffer.isBuffer(init.body) || init.body instanceof Uint8Array) body = Buffer.from(init.body).toString();
  return { method, path, status: init.status ?? 200, headers, body };
}

/**
 * The operation each exported handler answers for. Not the request's URL: a test may build a request
 * whose URL is not the route's (a batch id that the route would never have matched), and the handler
 * answers for its route whatever the URL says. A handler missing here fails the check, so a new or
 * renamed handler cannot go unchecked.
 */
const HANDLER_OPERATIONS: Record<string, [method: string, template: string]> = {
  postBatch: ['POST', '/api/batches'],
  listBatches: ['GET', '/api/batches'],
  getBatch: ['GET', '/api/batches/{batchId}'],
  getBatchReport: ['GET', '/api/batches/{batchId}/report'],
  getBatchTimeline: ['GET', '/api/batches/{batchId}/timeline'],
  health: ['GET', '/api/health'],
  getOpenApiDocument: ['GET', '/api/openapi.json'],
  getDashboard: ['GET', '/api/dashboard'],
  getEventKeys: ['GET', '/api/events/keys'],
  getStatus: ['GET', '/api/ops/status'],
  postRedrive: ['POST', '/api/ops/redrive'],
  postWebhookTest: ['POST', '/api/ops/webhooks/test'],
};

const isResponseInit = (v: unknown): v is ResponseInitLike =>
  typeof v === 'object' && v !== null && typeof (v as { status?: unknown }).status === 'number';

/** Wraps each exported function of an HTTP handler module so that its answers are checked. */
function wrapHandlers(mod: Record<string, unknown>): void {
  for (const [name, fn] of Object.entries(mod)) {
    if (typeof fn !== 'function') continue;
    const check = (result: unknown): unknown => {
      if (!isResponseInit(result)) return result;
      const operation = HANDLER_OPERATIONS[name];
      if (!operation)
        fail(`handler ${name} answered ${result.status} but is not in HANDLER_OPERATIONS (openapi-preload.ts)`);
      // The template is its own path: the checker matches it to that operation.
      verify(observed(operation[0], operation[1], result));
      return result;
    };
    mod[name] = function (this: unknown, ...args: unknown[]): unknown {
      const result: unknown = (fn as (...a: unknown[]) => unknown).apply(this, args);
      return result instanceof Promise ? result.then(check) : check(result);
    };
  }
}

function installHandlerHook(): void {
  const m = Module as unknown as { _load: (request: string, parent: unknown, isMain: boolean) => unknown };
  const load = m._load;
  const wrapped = new WeakSet<object>();
  m._load = function (request: string, parent: unknown, isMain: boolean): unknown {
    const exports = load.call(this, request, parent, isMain);
    if (/[\\/]functions[\\/][a-z-]+-http(\.js)?$/.test(request) || /^\.\.?\/[a-z-]+-http$/.test(request)) {
      if (typeof exports === 'object' && exports !== null && !wrapped.has(exports)) {
        wrapped.add(exports);
        theContract();
        wrapHandlers(exports as Record<string, unknown>);
      }
    }
    return exports;
  };
}

if (process.env.PUSHDRAIN_OPENAPI_CHECK !== 'off') {
  installFetch();
  installHandlerHook();
  process.on('exit', () => {
    if (mismatches.length === 0) return;
    process.stderr.write(
      `\n${mismatches.length} response(s) did not match static/openapi.json:\n${mismatches.map((t) => `  ${t}`).join('\n')}\n`,
    );
    process.exitCode = 1;
  });
}
