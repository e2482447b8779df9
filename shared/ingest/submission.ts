/**
 * A batch as an HTTP request carries it (POST /api/batches), and its ingest: the body is read
 * within the body and inflated-size caps, in a root usage scope (the batch has no id until it is
 * accepted). A request's stream is read once, as it arrives: it is never held whole.
 */
import type { Recipient, Submitter } from '../auth/principal';
import type { Settings } from '../config/settings';
import type { UsageLedger } from '../cost/usage-ledger';
import type { AppObserver } from '../status/app-observer';
import { bufferSource, streamSource } from './body';
import type { Ingestor, IngestResult } from './ingest';
import type { BodyFormat } from './records';

/** A batch as an HTTP request carries it. */
export interface Submission {
  /** The body in memory, or the request's stream (read once, capped at PUSHDRAIN_MAX_BODY_BYTES as sent). */
  body: Buffer | AsyncIterable<Uint8Array>;
  format: BodyFormat;
  gzip: boolean;
  idempotencyKey?: string;
  /** The `Callback-Url` header: checked against PUSHDRAIN_CALLBACK_ORIGINS before anything is written. */
  callbackUrl?: string;
  /** Fires when the client disconnects (the local host gives one; Azure's Node.js worker does not). */
  signal?: AbortSignal;
  /** The W3C trace context the batch's trace continues (the client's `traceparent`, or the host's invocation). */
  traceparent?: string;
  /** The token holder submitting it (none for a function-key holder): recorded, and scopes the Idempotency-Key. */
  submitter?: Submitter;
  /** Whom the batch's events belong to (its callback names it in what is signed). */
  recipient?: Recipient;
}

/** The parts an HTTP ingest uses. */
interface SubmissionParts {
  settings: Settings;
  usage: UsageLedger;
  ingestor: Ingestor;
  observer: Pick<AppObserver, 'accepted'>;
}

/** Ingests `s` with its callback already checked (`callbackUrl`, or none). */
export async function ingestSubmission(
  p: SubmissionParts,
  s: Submission,
  callbackUrl: string | undefined,
): Promise<IngestResult> {
  const { maxBodyBytes, maxInflatedBytes } = p.settings.tuning;
  const open = Buffer.isBuffer(s.body)
    ? bufferSource(s.body, s.gzip, maxInflatedBytes, s.signal)
    : streamSource(s.body, { gzip: s.gzip, maxBodyBytes, maxInflated: maxInflatedBytes }, s.signal);
  const result = await p.usage.run(undefined, undefined, () =>
    p.ingestor.ingest({
      open,
      format: s.format,
      ...(s.idempotencyKey !== undefined ? { idempotencyKey: s.idempotencyKey } : {}),
      ...(callbackUrl !== undefined ? { callbackUrl } : {}),
      ...(s.signal ? { signal: s.signal } : {}),
      ...(s.traceparent ? { traceparent: s.traceparent } : {}),
      ...(s.submitter ? { submitter: s.submitter } : {}),
      ...(s.recipient ? { recipient: s.recipient } : {}),
      source: 'http',
    }),
  );
  if (!result.replayed) p.observer.accepted('http', result.transactions);
  return result;
}
