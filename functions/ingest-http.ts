/** POST /api/batches: submit a batch (JSON array or NDJSON, optionally gzip). */
import type { HttpRequest, HttpResponseInit, InvocationContext } from '@azure/functions';

import type { PushdrainApp } from '../shared/app';
import { describeSubmitter, type Principal, printable, recipientOf, submitterOf } from '../shared/auth/principal';
import { AbortedError, type ErrorDetail, ValidationError } from '../shared/errors';
import { checkIdempotencyKey, tooLarge } from '../shared/ingest/ingest-errors';
import type { BodyFormat } from '../shared/ingest/records';
import { checkedTraceparent } from '../shared/telemetry/telemetry';
import { LogBudget } from '../shared/util/log-budget';
import { json } from './http-errors';
import { guardedRoute } from './http-route';
import { problem } from './problem';

const MEDIA_TYPES: Record<string, BodyFormat> = {
  'application/json': 'json',
  'application/x-ndjson': 'ndjson',
  'application/ndjson': 'ndjson',
  'application/jsonl': 'ndjson',
};

function unsupported(message: string): ValidationError {
  return new ValidationError(message, { code: 'unsupported_media_type' });
}

export function bodyKind(req: HttpRequest): { format: BodyFormat; gzip: boolean } {
  const type = (req.headers.get('content-type') ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  const format = MEDIA_TYPES[type];
  if (!format) throw unsupported('Content-Type must be application/json or application/x-ndjson');
  const encoding = (req.headers.get('content-encoding') ?? 'identity').trim().toLowerCase();
  if (encoding !== 'identity' && encoding !== 'gzip' && encoding !== 'x-gzip')
    throw unsupported('Content-Encoding must be gzip or absent');
  return { format, gzip: encoding !== 'identity' };
}

/** Refused submissions are logged one line each, as accepted ones are, up to this many a minute. */
const REFUSALS_LOGGED_PER_MINUTE = 10;
const refusals = new LogBudget(REFUSALS_LOGGED_PER_MINUTE);

/** One line for a refused submission (4xx): what the client was told, never the body nor a credential. */
function logRefusal(response: HttpResponseInit, context: InvocationContext): void {
  if (response.status === undefined || response.status < 400 || response.status >= 500) return;
  const body = (response.jsonBody ?? {}) as { error?: string; message?: string; details?: ErrorDetail[] };
  const first = body.details?.[0];
  const where = first ? [`line ${first.line}`, first.field].filter((p) => p !== '').join(', ') : '';
  // Field names and messages quote the client's JSON: control characters would forge or split the line.
  const line = refusals.pass(
    printable(
      `batch refused: HTTP ${response.status} ${body.error ?? ''}: ${body.message ?? ''}${first ? `; first: ${where}: ${first.message}` : ''}`,
      2000,
    ),
  );
  if (line) context.warn(line);
}

/** The declared Content-Length, if it is one; one over `maxBytes` is refused before anything else. */
function declaredLength(req: HttpRequest, maxBytes: number): number | undefined {
  const raw = req.headers.get('content-length');
  const n = raw === null ? Number.NaN : Number(raw);
  if (n > maxBytes) throw tooLarge(`the body exceeds ${maxBytes} bytes`);
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/** The optional Idempotency-Key, checked before the body is read (ingest checks it again). */
export function idempotencyKey(req: HttpRequest): string | undefined {
  const key = req.headers.get('idempotency-key') ?? undefined;
  checkIdempotencyKey(key);
  return key;
}

/**
 * The request's abort signal, where the host gives one: the local host puts it in the trigger
 * metadata as `abortSignal`. Azure's Node.js worker passes no cancellation to a running
 * invocation, so there a request runs to its end, within the ingest's bounds.
 */
export function requestSignal(context: InvocationContext): AbortSignal | undefined {
  const s = context.triggerMetadata?.abortSignal;
  return s instanceof AbortSignal ? s : undefined;
}

/**
 * The trace context the batch continues: the host's invocation (in Azure it has already continued
 * the client's `traceparent`), else the client's own header (the local host has no invocation span).
 */
export function requestTraceparent(req: HttpRequest, context: InvocationContext): string | undefined {
  return checkedTraceparent(context.traceContext?.traceParent) ?? checkedTraceparent(req.headers.get('traceparent'));
}

export const postBatch = guardedRoute('postBatch', {
  route: 'batches',
  method: 'POST',
  // The helper authorizes first: a refused caller gets nothing read, provisioned or written.
  handle: async ({ app, req, context, caller }) => {
    const started = Date.now();
    try {
      return await submit(app, req, context, caller);
    } catch (e) {
      if (e instanceof AbortedError)
        context.log(
          `the client disconnected; the ingest stopped after ${Date.now() - started} ms and accepted nothing`,
        );
      throw e;
    }
  },
  // Nobody is left to read an abandoned request's answer, and its line is above.
  refused: (response, error, context) => {
    if (!(error instanceof AbortedError)) logRefusal(response, context);
  },
});

/** A client refused for memory comes back after 5–15 s: spread, so that refused clients do not return together. */
function retryAfterSeconds(): number {
  return 5 + Math.floor(Math.random() * 11);
}

async function submit(
  app: PushdrainApp,
  req: HttpRequest,
  context: InvocationContext,
  caller: Principal,
): Promise<HttpResponseInit> {
  const kind = bodyKind(req);
  const key = idempotencyKey(req);
  const declared = declaredLength(req, app.maxBodyBytes);
  // Before a byte is read: a body this process has no memory for now is not started.
  const release = app.admitIngest(declared, kind.gzip);
  if (!release) {
    const seconds = retryAfterSeconds();
    const line = refusals.pass(
      `batch refused: HTTP 503, no memory free for a body of ${declared ?? 'undeclared'} bytes; retry after ${seconds} s`,
    );
    if (line) context.warn(line);
    return problem(
      503,
      'unavailable',
      `this instance has no memory free for the batch now; retry after ${seconds} s`,
      { invocationId: context.invocationId },
      { 'Retry-After': String(seconds) },
    );
  }
  try {
    return await admitted(app, req, context, { caller, ...kind, ...(key !== undefined ? { key } : {}) });
  } finally {
    release();
  }
}

/** What submit checked of the request before admitting it. */
interface Checked {
  caller: Principal;
  format: BodyFormat;
  gzip: boolean;
  key?: string;
}

async function admitted(
  app: PushdrainApp,
  req: HttpRequest,
  context: InvocationContext,
  { caller, format, gzip, key }: Checked,
): Promise<HttpResponseInit> {
  const submitter = submitterOf(caller);
  const callbackUrl = req.headers.get('callback-url') ?? undefined;
  const signal = requestSignal(context);
  const traceparent = requestTraceparent(req, context);
  const result = await app.submit({
    // Read as it arrives (HTTP streams), never held whole: the ingest validates it on the way.
    body: (req.body as AsyncIterable<Uint8Array> | null) ?? Buffer.alloc(0),
    format,
    gzip,
    ...(key !== undefined ? { idempotencyKey: key } : {}),
    ...(callbackUrl !== undefined ? { callbackUrl } : {}),
    ...(signal ? { signal } : {}),
    ...(traceparent ? { traceparent } : {}),
    ...(submitter ? { submitter } : {}),
    recipient: recipientOf(caller),
  });
  context.log(
    `batch ${result.batchId}: ${result.replayed ? 'replayed' : 'accepted'}, ${result.transactions} transactions in ${result.chunks} chunks, submitted by ${describeSubmitter(submitter)}`,
  );
  return json(
    202,
    // A replay answers for the batch as it is now (it may have completed), not as it was accepted.
    {
      batchId: result.batchId,
      status: result.status,
      transactions: result.transactions,
      chunks: result.chunks,
      ...(result.controlTotals ? { controlTotals: result.controlTotals } : {}),
    },
    { Location: `/api/batches/${result.batchId}`, ...(result.replayed ? { 'Idempotent-Replayed': 'true' } : {}) },
  );
}
