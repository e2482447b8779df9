/**
 * Loaded into every test process (`node --require`, see scripts/run-tests.mjs): every request the
 * tests send to pushdrain's API, and every response they receive from it, is held against the
 * OpenAPI document (openapi-contract.ts). Two ways in: fetch to a loopback `/api/…` URL (a host
 * the test started), and the HTTP handlers of functions/ called directly (test/support/invoke and
 * the access tests do). A mismatch is thrown into the caller's await, so that test fails; it is
 * also printed at once, and again when the process exits with exit code 1, so a test that
 * expected a rejection cannot swallow it. A request a test sends invalid on purpose carries the
 * mark of invalid-on-purpose.ts, and must then be invalid.
 *
 * Each `METHOD /template status` answered is appended, when the process exits, to the file that
 * PUSHDRAIN_OPENAPI_COVERAGE names (scripts/run-tests.mjs sets it and lists the documented
 * statuses no test reached). PUSHDRAIN_OPENAPI_CHECK=off turns all of it off (to tell a contract
 * failure from another).
 */
import { appendFileSync } from 'node:fs';
import Module from 'node:module';

import { INVALID_ON_PURPOSE } from './invalid-on-purpose';
import {
  MAX_CHECKED_BODY_BYTES,
  type ObservedRequest,
  type ObservedResponse,
  OpenApiContract,
} from './openapi-contract';

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

/** `METHOD /template status` of each answer this process saw, for the suite's coverage list. */
const reached = new Set<string>();

function verify(r: ObservedResponse): void {
  const c = theContract();
  const operation = c.operationOf(r.method, r.path);
  const key = operation && c.responseKey(...(operation.split(' ') as [string, string]), r.status);
  if (operation && key) reached.add(`${operation} ${key}`);
  const problems = c.check(r);
  if (problems.length === 0) return;
  fail(`${r.method} ${r.path} → ${r.status} does not match static/openapi.json: ${problems.join('; ')}`);
}

/**
 * Holds a request against the document. A request marked invalid on purpose must be invalid; one
 * whose body could not be seen (a stream) is let through, as its body might be what is wrong.
 */
function verifyRequest(r: ObservedRequest, onPurpose: boolean): void {
  const problems = theContract().checkRequest(r);
  if (onPurpose) {
    if (problems.length === 0 && r.body !== undefined)
      fail(
        `${r.method} ${r.path} is marked invalid on purpose (${INVALID_ON_PURPOSE}) but matches static/openapi.json`,
      );
    return;
  }
  if (problems.length > 0)
    fail(`request ${r.method} ${r.path} does not match static/openapi.json: ${problems.join('; ')}`);
}

/** A fetch body's bytes where they can be seen without consuming it; undefined for a stream or a form. */
function fetchBody(body: unknown): Buffer | undefined {
  if (body === undefined || body === null) return Buffer.alloc(0);
  if (typeof body === 'string') return Buffer.from(body);
  if (body instanceof ArrayBuffer) return Buffer.from(body);
  if (ArrayBuffer.isView(body)) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (body instanceof URLSearchParams) return Buffer.from(body.toString());
  return undefined;
}

function lowerCased(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((v, k) => (out[k.toLowerCase()] = v));
  return out;
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
    const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
    const sent = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    const onPurpose = sent.has(INVALID_ON_PURPOSE);
    const body =
      init && 'body' in init
        ? fetchBody(init.body)
        : input instanceof Request && input.body
          ? undefined
          : Buffer.alloc(0);
    verifyRequest({ method, path: url.pathname, query: url.searchParams, headers: lowerCased(sent), body }, onPurpose);
    if (onPurpose) {
      // The mark is the test's, not the request's: the server never sees it.
      sent.delete(INVALID_ON_PURPOSE);
      if (input instanceof Request && !init) input = new Request(input, { headers: sent });
      else init = { ...init, headers: sent };
    }
    const res = await original(input, init);
    let text: string;
    try {
      text = method === 'HEAD' ? '' : await res.clone().text();
    } catch {
      // The connection broke while the body came: there is no whole response to hold.
      return res;
    }
    verify({ method, path: url.pathname, status: res.status, headers: lowerCased(res.headers), body: text });
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
  new Headers(init.headers).forEach((v, k) => (headers[k.toLowerCase()] = v));
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

interface HttpRequestLike {
  method: string;
  url: string;
  headers: Headers;
  query: URLSearchParams;
  params: Record<string, string>;
}

/**
 * The Functions library's HttpRequest, from the copy the handler modules load: `instanceof`, not a
 * look at an argument's members, which a test's stand-in app (a Proxy that records what is
 * touched) would count as touched.
 */
function isHttpRequestOf(file: string): (v: unknown) => v is HttpRequestLike {
  const { HttpRequest } = Module.createRequire(file)('@azure/functions') as { HttpRequest: new () => unknown };
  return (v: unknown): v is HttpRequestLike => v instanceof HttpRequest;
}

/**
 * What the handler read of the request's body, seen without reading a byte more than it does: a
 * refused caller's body must stay unread (test/http/token-before-body.test.ts), and an early stop must stay
 * early. The `body` stream the handler takes is a pass-through that keeps each chunk it hands on
 * (not a tee: a tee's branch cancels only once the other branch is cancelled too, so a handler
 * that stops early would wait on it for ever), and `text()` keeps what it returned. The copy is
 * undefined when the handler did not read the body to its end, or it is past
 * MAX_CHECKED_BODY_BYTES: then the body goes unchecked.
 */
function tapBody(req: HttpRequestLike): () => Buffer | undefined {
  const ownBody = Object.getOwnPropertyDescriptor(req, 'body');
  // A test's own probe that cannot be redefined (http-route's) is left alone: the body goes unchecked.
  if (ownBody?.configurable === false || Object.getOwnPropertyDescriptor(req, 'text')?.configurable === false)
    return () => undefined;
  const original = (): ReadableStream<Uint8Array> | null =>
    (ownBody
      ? ownBody.get
        ? ownBody.get.call(req)
        : ownBody.value
      : Reflect.get(Object.getPrototypeOf(req) as object, 'body', req)) as ReadableStream<Uint8Array> | null;
  const parts: Uint8Array[] = [];
  let total = 0;
  let whole: Buffer | undefined;
  let passThrough: ReadableStream<Uint8Array> | null | undefined;
  Object.defineProperty(req, 'body', {
    configurable: true,
    get: () => {
      if (passThrough !== undefined) return passThrough;
      const stream = original();
      if (!stream) {
        whole = Buffer.alloc(0);
        return (passThrough = null);
      }
      const reader = stream.getReader();
      passThrough = new ReadableStream<Uint8Array>(
        {
          async pull(controller) {
            const next = await reader.read();
            if (next.done) {
              if (total <= MAX_CHECKED_BODY_BYTES) whole = Buffer.concat(parts, total);
              return controller.close();
            }
            total += next.value.length;
            if (total <= MAX_CHECKED_BODY_BYTES) parts.push(next.value);
            else parts.length = 0;
            controller.enqueue(next.value);
          },
          cancel: (reason) => reader.cancel(reason),
        },
        { highWaterMark: 0 },
      );
      return passThrough;
    },
  });
  const text = (req as unknown as { text: () => Promise<string> }).text;
  Object.defineProperty(req, 'text', {
    configurable: true,
    value: async () => {
      const read = await text.call(req);
      whole = Buffer.from(read);
      return read;
    },
  });
  return () => whole;
}

function requestOf(
  req: HttpRequestLike,
  [method, template]: [string, string],
  body: Buffer | undefined,
): ObservedRequest {
  const headers = lowerCased(req.headers);
  delete headers[INVALID_ON_PURPOSE];
  // The template is its own path: the checker matches it to that operation, with the route's params.
  return { method, path: template, params: { ...req.params }, query: req.query, headers, body };
}

/** Wraps each exported function of an HTTP handler module so that its requests and answers are checked. */
function wrapHandlers(mod: Record<string, unknown>, file: string): void {
  const isHttpRequest = isHttpRequestOf(file);
  for (const [name, fn] of Object.entries(mod)) {
    if (typeof fn !== 'function') continue;
    const operationOf = (status: number): [string, string] => {
      const operation = HANDLER_OPERATIONS[name];
      if (!operation) fail(`handler ${name} answered ${status} but is not in HANDLER_OPERATIONS (openapi-preload.ts)`);
      return operation;
    };
    const check = (result: unknown): unknown => {
      if (!isResponseInit(result)) return result;
      const operation = operationOf(result.status!);
      verify(observed(operation[0], operation[1], result));
      return result;
    };
    mod[name] = function (this: unknown, ...args: unknown[]): unknown {
      const req = args.find(isHttpRequest);
      const operation = req && HANDLER_OPERATIONS[name];
      const onPurpose = req?.headers.has(INVALID_ON_PURPOSE) ?? false;
      // A GET has no body to wait for: checked before the handler runs, which may answer at once.
      if (req && operation && (operation[0] === 'GET' || operation[0] === 'HEAD'))
        verifyRequest(requestOf(req, operation, Buffer.alloc(0)), onPurpose);
      const tapped = req && operation && operation[0] !== 'GET' && operation[0] !== 'HEAD' ? tapBody(req) : undefined;
      const result: unknown = (fn as (...a: unknown[]) => unknown).apply(this, args);
      if (!(result instanceof Promise)) return check(result);
      return result.then((r: unknown) => {
        if (tapped && req && operation) verifyRequest(requestOf(req, operation, tapped()), onPurpose);
        return check(r);
      });
    };
  }
}

/** The app's own HTTP adapters (functions/*-http.js), by resolved file: a dependency's `./…-http` is not one. */
const HANDLER_FILE = /[\\/]dist[\\/]functions[\\/][a-z-]+-http\.js$/;

function installHandlerHook(): void {
  const m = Module as unknown as {
    _load: (request: string, parent: unknown, isMain: boolean) => unknown;
    _resolveFilename: (request: string, parent: unknown, isMain: boolean) => string;
  };
  const load = m._load;
  const wrapped = new WeakSet<object>();
  m._load = function (request: string, parent: unknown, isMain: boolean): unknown {
    const exports = load.call(this, request, parent, isMain);
    const file = /-http(\.js)?$/.test(request) ? m._resolveFilename(request, parent, isMain) : '';
    if (HANDLER_FILE.test(file)) {
      if (typeof exports === 'object' && exports !== null && !wrapped.has(exports)) {
        wrapped.add(exports);
        theContract();
        wrapHandlers(exports as Record<string, unknown>, file);
      }
    }
    return exports;
  };
}

if (process.env.PUSHDRAIN_OPENAPI_CHECK !== 'off') {
  installFetch();
  installHandlerHook();
  process.on('exit', () => {
    const coverage = process.env.PUSHDRAIN_OPENAPI_COVERAGE;
    // One write per process, each line whole: the suite's processes append to the same file.
    if (coverage && reached.size > 0) appendFileSync(coverage, [...reached].map((l) => `${l}\n`).join(''));
    if (mismatches.length === 0) return;
    process.stderr.write(
      `\n${mismatches.length} response(s) did not match static/openapi.json:\n${mismatches.map((t) => `  ${t}`).join('\n')}\n`,
    );
    process.exitCode = 1;
  });
}
