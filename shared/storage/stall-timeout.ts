/**
 * A client-side bound on every Storage attempt. The SDK's `tryTimeoutInMs` is only the server's
 * `?timeout=` hint, and `request.timeout` aborts with an AbortError that the SDK's retry policy
 * does not retry. This policy sits below the retry policy (one timer per attempt), abandons an
 * attempt that makes no progress for `stallMs`, and fails it with a RestError coded ETIMEDOUT,
 * which both the SDK's retry policy and shared/retry/transient.ts retry.
 *
 * It bounds time without progress, not total time, so a large transfer is never cut off while
 * bytes move: a large buffer is sent as a stream of slices (progress then follows the socket),
 * response bytes count as they arrive, and a streamed body that its reader is slow to take
 * (bytes waiting in its buffer) is backpressure, not a stall. The OS takes a request body into
 * its socket buffers (megabytes) long before the bytes reach the server, so a request with a
 * body gets `min(size, 16 MiB) / (1 MiB/s)` on top of the bound: at most 16 s more.
 */
import { Readable } from 'node:stream';

import type { PipelinePolicy, PipelineRequest, PipelineResponse, SendRequest } from '@azure/core-rest-pipeline';
import { RestError } from '@azure/core-rest-pipeline';

const STALL_TIMEOUT_POLICY = 'pushdrainStallTimeout';

/** Buffers at least this large are sent in slices, so upload progress tracks the socket. */
const SLICE_BYTES = 64 * 1024;
/** Upload bytes that may sit in socket buffers unseen, and the slowest rate they are allowed to drain at. */
const IN_FLIGHT_CAP_BYTES = 16 * 1024 * 1024;
const MIN_UPLOAD_BYTES_PER_MS = (1024 * 1024) / 1000;

function stallError(stallMs: number): RestError {
  return new RestError(`Storage request made no progress for ${stallMs} ms; abandoned so that it can be retried`, {
    code: 'ETIMEDOUT',
  });
}

export function stallTimeoutPolicy(stallMs: number): PipelinePolicy {
  if (!(Number.isFinite(stallMs) && stallMs > 0))
    throw new RangeError(`stallMs must be a positive number, got ${stallMs}`);
  return { name: STALL_TIMEOUT_POLICY, sendRequest: (request, next) => attempt(request, next, stallMs) };
}

/** A response body as Node streams have it (a Transform when the client reports progress). */
interface StreamBody extends NodeJS.ReadableStream {
  readonly readableLength?: number;
  readonly writableLength?: number;
  readonly readableEnded?: boolean;
  readonly destroyed?: boolean;
  destroy?(error?: Error): void;
}

async function attempt(request: PipelineRequest, next: SendRequest, stallMs: number): Promise<PipelineResponse> {
  const caller = request.abortSignal;
  if (caller?.aborted) return next(request); // the HTTP client reports the caller's abort itself
  const controller = new AbortController();
  const onCallerAbort = (): void => controller.abort();
  caller?.addEventListener('abort', onCallerAbort);
  const boundMs = stallMs + Math.min(bodyBytes(request), IN_FLIGHT_CAP_BYTES) / MIN_UPLOAD_BYTES_PER_MS;
  let handle: NodeJS.Timeout | undefined;
  let stalled = false;
  let body: StreamBody | undefined;
  const finish = (): void => {
    clearTimeout(handle);
    handle = undefined;
    caller?.removeEventListener('abort', onCallerAbort);
  };
  const fire = (): void => {
    // Bytes waiting in the body's buffer mean its reader is slow: backpressure, not a stall.
    if (body && ((body.readableLength ?? 0) > 0 || (body.writableLength ?? 0) > 0)) return arm();
    stalled = true;
    finish();
    body?.destroy?.(stallError(stallMs));
    controller.abort();
  };
  const arm = (): void => {
    if (stalled) return;
    clearTimeout(handle);
    handle = setTimeout(fire, boundMs).unref();
  };

  const saved = {
    abortSignal: caller,
    body: request.body,
    onUploadProgress: request.onUploadProgress,
    onDownloadProgress: request.onDownloadProgress,
  };
  request.abortSignal = controller.signal;
  request.body = sliced(request) ?? request.body;
  request.onUploadProgress = (p) => (arm(), saved.onUploadProgress?.(p));
  request.onDownloadProgress = (p) => (arm(), saved.onDownloadProgress?.(p));
  arm();
  try {
    const response = await next(request);
    // tsc needs the assertion (StreamBody adds readableEnded and destroyed); typescript-eslint's
    // type service does not see the difference.
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion
    const stream = response.readableStreamBody as StreamBody | undefined;
    if (!stream || stream.readableEnded === true || stream.destroyed === true) finish();
    else {
      body = stream;
      for (const event of ['end', 'close', 'error']) stream.once(event, finish);
    }
    return response;
  } catch (e) {
    finish();
    if (stalled && !caller?.aborted) throw stallError(stallMs);
    throw e;
  } finally {
    // The same request object goes round the retry loop: the next attempt starts clean.
    Object.assign(request, saved);
  }
}

function bodyBytes(request: PipelineRequest): number {
  const body = request.body;
  if (body instanceof Uint8Array) return body.byteLength;
  if (typeof body === 'string') return Buffer.byteLength(body);
  const declared = Number(request.headers.get('Content-Length'));
  return Number.isFinite(declared) && declared > 0 ? declared : 0;
}

/** A factory of 64 KiB slices for a large buffer body (a fresh stream per attempt). */
function sliced(request: PipelineRequest): (() => NodeJS.ReadableStream) | undefined {
  const body = request.body;
  if (!(body instanceof Uint8Array) || body.byteLength < SLICE_BYTES) return undefined;
  if (!request.headers.has('Content-Length')) request.headers.set('Content-Length', body.byteLength);
  return () => Readable.from(slices(body), { objectMode: false, highWaterMark: SLICE_BYTES });
}

function* slices(body: Uint8Array): Generator<Buffer> {
  for (let at = 0; at < body.byteLength; at += SLICE_BYTES) {
    yield Buffer.from(body.buffer, body.byteOffset + at, Math.min(SLICE_BYTES, body.byteLength - at));
  }
}
