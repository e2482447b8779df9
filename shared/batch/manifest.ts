/**
 * The manifest, `batches/{batchId}/manifest.json`: the batch's one record of truth. Its store
 * is manifest-store.ts; the states it moves through are batch-state.ts.
 */
import type { Recipient, Submitter } from '../auth/principal';
import type { ControlMismatch } from '../billing/control-check';
import type { BatchUsage } from '../cost/batch-usage';
import type { OutboxEvent } from '../events/outbox';
import type { ControlSum } from '../model/control-totals';
import type { Wake } from '../notify/notifier';
import type { BatchState } from './batch-state';
import type { BatchTimeline } from './timeline';

export interface FailedChunk {
  chunk: number;
  reason: string;
}

export interface Manifest {
  v: 1;
  batchId: string;
  state: BatchState;
  source: 'http' | 'sweep';
  /** The incoming/ blob a swept batch came from. */
  sourceName?: string;
  idempotencyKey?: string;
  /** Who submitted it over HTTP with a token (a function key or the sweep records none). */
  submitter?: Submitter;
  /** Whom its events belong to (absent before this was recorded: see batch-event.ts). */
  recipient?: Recipient;
  /**
   * A random id per ingest request. Tells "our own create, retried after its response was
   * lost" from "another request's claim", and keeps a taken-over request from touching it.
   */
  attempt?: string;
  /** While `ingesting`: the last heartbeat of the request doing it (staleness is measured from here). */
  aliveAt?: string;
  bodySha256: string;
  /**
   * The control totals ingest counted from the accepted records (control-totals.ts); absent on a
   * batch accepted before they were kept, whose finalize checks the transaction count only.
   */
  controls?: ControlSum[];
  submittedAt: string;
  acceptedAt?: string;
  /** The last time a chunk of this batch settled (done or failed). */
  progressAt?: string;
  completedAt?: string;
  /** submittedAt → completedAt, in ms. */
  latencyMs?: number;
  transactions: number;
  /** Transactions per chunk when this batch was cut (a take-over must cut identically). */
  chunkSize: number;
  /** Lines per gzip member of a chunk; absent: one member per chunk (versions before the chunk size rule). */
  chunkPiece?: number;
  chunks: number;
  /** The queues its chunks went to, each with its count and size: what ingest woke, and recovery wakes again. */
  queues: Required<Wake>[];
  /** `pending` until every WorkDetected event for the batch is published. */
  notification: 'pending' | 'sent';
  done: number[];
  failed: FailedChunk[];
  error?: string;
  /** The figures that disagreed, when the finalizer failed the batch on its control totals (control-check.ts). */
  mismatches?: ControlMismatch[];
  /** sha256 (hex) of the report's bytes, as written and as `GET …/report` serves them. */
  reportSha256?: string;
  /** The client's `Callback-Url` (an allowlisted origin), delivered to beside the operator's webhooks. */
  callbackUrl?: string;
  /**
   * The outbox: each completed/failed event with its deliveries, recorded by the very write that
   * made the batch terminal (see shared/events/outbox.ts).
   */
  events?: OutboxEvent[];
  /**
   * Sequence numbers of the watchdog check scheduled for it now, where the publisher hands them
   * back (empty: scheduled, none handed back): once the batch is terminal the finalizer cancels
   * it, so it never comes due for nothing; recovery schedules no second check beside it.
   */
  watchdog?: string[];
  /** W3C trace context of the batch's ingest span: every later span of the batch is in its trace. */
  traceparent?: string;
  /** When its chunks were billed and folded, bounded (see timeline.ts); folded in by the progress writes. */
  timeline?: BatchTimeline;
  /**
   * What the batch used: Storage requests, Service Bus operations, CPU time; each write adds what
   * its process metered for the batch since its last write (shared/cost/usage-ledger.ts).
   */
  usage?: BatchUsage;
}

export function isSettled(m: Manifest): boolean {
  return m.done.length + m.failed.length >= m.chunks;
}
