/**
 * Serves the captured HTTP triggers on node:http: same routes, prefix and methods as Azure.
 * Function keys are not checked locally (any key or none is accepted), as with Core Tools.
 * The body is a stream, as Azure gives it with HTTP streams on (the app enables them,
 * functions/http-route.ts): the handler is invoked when the headers are in, so a route that
 * refuses the caller's token answers before a byte of the body is read, and the socket is closed
 * after such an answer instead of reading the rest. Unlike Azure, a client that disconnects is
 * noticed: the handler gets an abort signal (InvocationContext.triggerMetadata.abortSignal), and
 * the body stream fails.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

import { HttpRequest, type HttpRequestInit, HttpResponse, type HttpResponseInit } from '@azure/functions';

import { type HostLog, invocationContext } from './invocation';
import type { RouteEntry } from './routes';

/** Azure's front end refuses bodies over 100 MB; so does the local host. */
const MAX_REQUEST_BYTES = 100 * 1024 * 1024;

export interface HttpHost {
  readonly port: number;
  readonly url: string;
  close(): Promise<void>;
}

/** What the host saw of a body while the handler streamed it. */
interface BodyWatch {
  /** The body passed MAX_REQUEST_BYTES: the host answered 413 itself. */
  tooLarge: boolean;
  /** The client went away mid-upload, after this many bytes. */
  gone?: number;
}

/**
 * The request's body as the handler reads it, counted: past MAX_REQUEST_BYTES the host answers
 * 413 and the invocation is abandoned, as when the client goes away mid-upload. Nothing is read
 * until the handler asks.
 */
async function* watchedBody(
  req: IncomingMessage,
  res: ServerResponse,
  aborter: AbortController,
  watch: BodyWatch,
): AsyncGenerator<Buffer> {
  let total = 0;
  try {
    // A handler that stops reading early (a gzip bomb, a batch past the limit) still answers: the
    // request is not destroyed with the loop, and the answer's lingering close drops the rest.
    for await (const chunk of req.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
      total += chunk.length;
      if (total > MAX_REQUEST_BYTES) {
        watch.tooLarge = true;
        tooLarge(res);
        aborter.abort();
        throw new Error(`the request body exceeds ${MAX_REQUEST_BYTES} bytes`);
      }
      yield chunk;
    }
  } catch (e) {
    // The client went away mid-upload ("aborted", ECONNRESET): the handler stops, nobody is answered.
    if (req.destroyed && !watch.tooLarge) {
      watch.gone = total;
      aborter.abort();
    }
    throw e;
  }
}

const TITLES: Readonly<Record<string, string>> = {
  too_large: 'The body is too large',
  invalid_request: 'The request is invalid',
  internal: 'Internal error',
};

/**
 * The host's own error answers, as the app's are (functions/problem.ts): RFC 9457 problem details,
 * with the code and message also as `error` and `message`.
 */
function send(
  res: ServerResponse,
  status: number,
  error: string,
  message: string,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify({
    type: `tag:pushdrain,2026:${error}`,
    title: TITLES[error],
    status,
    detail: message,
    error,
    message,
  });
  res.writeHead(status, {
    'Content-Type': 'application/problem+json',
    'Content-Length': String(Buffer.byteLength(text)),
    ...headers,
  });
  res.end(text);
}

/**
 * Refuses a body without reading it: `Connection: close` makes Node close the socket once the
 * answer is out, instead of reading (and discarding) whatever the client still sends.
 */
function tooLarge(res: ServerResponse): void {
  send(res, 413, 'too_large', `the request body exceeds ${MAX_REQUEST_BYTES} bytes`, { Connection: 'close' });
}

/** How long a socket answered before its body was read still takes (and drops) what the client sends. */
const LINGER_MS = 2_000;

/**
 * After the answer: a FIN, then what the client still sends is drained into nothing until it
 * closes or LINGER_MS has passed. (`Connection: close` would make Node destroy the socket as soon
 * as the answer is out.)
 */
function lingerThenClose(req: IncomingMessage, res: ServerResponse): void {
  const socket = req.socket;
  const cut = setTimeout(() => socket.destroy(), LINGER_MS);
  socket.once('close', () => clearTimeout(cut));
  res.once('finish', () => {
    req.resume();
    socket.end();
  });
}

/** A route match, or 'bad_escape' for a path whose percent-encoding does not decode. */
function matchRoute(route: RouteEntry, path: string): Record<string, string> | undefined | 'bad_escape' {
  try {
    return route.match(path);
  } catch (e) {
    if (e instanceof URIError) return 'bad_escape';
    throw e;
  }
}

async function dispatch(
  routes: RouteEntry[],
  log: HostLog,
  req: IncomingMessage,
  res: ServerResponse,
  port: number,
): Promise<void> {
  const url = new URL(req.url ?? '/', `http://localhost:${port}`);
  const path = url.pathname.replace(/^\/+/, '/');
  const method = (req.method ?? 'GET').toUpperCase();
  for (const route of routes) {
    const params = matchRoute(route, path);
    if (params === 'bad_escape')
      return send(res, 400, 'invalid_request', 'the URL path has a malformed percent-encoding');
    if (!params) continue;
    if (!route.methods.includes(method)) continue;
    if (Number(req.headers['content-length'] ?? 0) > MAX_REQUEST_BYTES) return tooLarge(res);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers))
      if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
    // 'close' before the answer is out: the client is gone, so the handler may stop.
    const aborter = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) aborter.abort();
    });
    const watch: BodyWatch = { tooLarge: false };
    const hasBody = method !== 'GET' && method !== 'HEAD';
    // What the Functions library builds in stream mode (createStreamRequest): a fetch Request
    // over the incoming stream. `nativeRequest` is that init's field, not in the public type.
    const nativeRequest = new Request(url, {
      method,
      headers,
      ...(hasBody ? { body: ReadableStream.from(watchedBody(req, res, aborter, watch)), duplex: 'half' } : {}),
    });
    const request = new HttpRequest({
      method,
      url: url.toString(),
      headers,
      params,
      query: Object.fromEntries(url.searchParams),
      nativeRequest,
    } as HttpRequestInit);
    const context = invocationContext(route.functionName, log, { abortSignal: aborter.signal });
    const result = (await route.registration.handler(request, context)) as HttpResponseInit | HttpResponse | undefined;
    if (watch.gone !== undefined)
      log(
        'information',
        route.functionName,
        `the client disconnected during the upload (${watch.gone} bytes received)`,
      );
    if (aborter.signal.aborted || res.headersSent) return;
    const response = result instanceof HttpResponse ? result : new HttpResponse(result ?? { status: 204 });
    const out = Buffer.from(await response.arrayBuffer());
    const outHeaders: Record<string, string> = {};
    response.headers.forEach((v, k) => (outHeaders[k] = v));
    // A body the handler did not read (a refused token, say) is not kept: Node drops what the
    // client still sends once the answer is out, and the socket is cut LINGER_MS later. Not closed
    // at once: closed with unread data, a socket is reset, and the reset can destroy the answer
    // before the client reads it (the "lingering close" of HTTP servers).
    if (!req.complete) lingerThenClose(req, res);
    res.writeHead(response.status, outHeaders);
    res.end(out);
    return;
  }
  // Azure's host answers both an unknown route and a method the route does not take with an
  // empty 404: its routes carry the methods as a constraint, so a wrong method matches nothing
  // (Azure/azure-functions-host#10098).
  res.writeHead(404, { 'Content-Length': '0' });
  res.end();
}

export async function startHttpHost(routes: RouteEntry[], port: number, log: HostLog): Promise<HttpHost> {
  let actualPort = port;
  const server: Server = createServer((req, res) => {
    dispatch(routes, log, req, res, actualPort).catch((e: unknown) => {
      log('error', 'host', `HTTP dispatch failed: ${(e as Error).stack ?? String(e)}`);
      if (!res.headersSent) send(res, 500, 'internal', 'internal error');
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  actualPort = (server.address() as AddressInfo).port;
  return {
    port: actualPort,
    url: `http://localhost:${actualPort}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
