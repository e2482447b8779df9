/**
 * A batch as an HTTP request carries it (POST /api/batches), and its ingest: the body is read
 * within the inflated-size cap, in a root usage scope (the batch has no id until it is accepted).
 */
import type { Recipient, Submitter } from '../auth/principal';
import type { Settings } from '../config/settings';
import type { UsageLedger } from '../cost/usage-ledger';
import type { AppObserver } from '../status/app-observer';
import { bufferSource } from './body';
import type { Ingestor, IngestResult } from './ingest';
import type { BodyFormat } from './records';

/** A batch as an HTTP request carries it. */
export interface Submission {
  body: Buffer;
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
  const result = await p.usage.run(undefined, undefined, () =>
    p.ingestor.ingest({
      open: bufferSource(s.body, s.gzip, p.settings.tuning.maxInflatedBytes, s.signal),
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
