/**
 * Completes a batch once every chunk is done or failed: merge the chunk partials into the
 * report, check it against the control totals (control-check.ts: a mismatch fails the batch and
 * writes no report), write `reports/{batchId}.json`, then mark the manifest. Safe to run twice
 * (concurrent aggregators, or ingest and an aggregator): the report is the same bytes and
 * the manifest keeps its first completion.
 *
 * Two ways in: `settle` is called by the progress write that settles the batch, so the chunk
 * outcome and the completion go into one manifest write; `ifSettled` finalizes a manifest
 * that is already settled (ingest, the watchdog, a redelivery after a lost finalize).
 */
import { createHash } from 'node:crypto';

import { isTerminal } from '../batch/batch-state';
import { isSettled, type Manifest } from '../batch/manifest';
import type { ManifestStore } from '../batch/manifest-store';
import type { OpenBatches } from '../batch/open-batches';
import { emptyTimeline } from '../batch/timeline';
import {
  checkInputs,
  checkReport,
  type ControlMismatch,
  keptMismatches,
  mismatchError,
} from '../billing/control-check';
import { type Report, ReportBuilder } from '../billing/report';
import { parseResultHeader, readResultHeader, type RecentResults, type ResultHeader } from '../billing/result-blob';
import type { PriceSettings } from '../config/price-settings';
import { batchCost } from '../cost/batch-cost';
import { ensureError, TransientError } from '../errors';
import type { EventDelivery } from '../events/event-delivery';
import { hasPendingDeliveries, topicUnsent } from '../events/outbox';
import { layout } from '../layout';
import type { Notifier } from '../notify/notifier';
import type { BlobStore, Logger } from '../ports';
import { NO_TELEMETRY, type SpanHandle, type Telemetry } from '../telemetry/telemetry';
import { mapLimit } from '../util/pool';

const READ_CONCURRENCY = 8;

/** What finalizing a batch whose chunks are all done found: a report that reconciles, or the figures that do not. */
type Verdict = { report: Report; sha256: string } | { mismatches: ControlMismatch[] };

/**
 * The verdict and the W3C context of the finalize span that reached it: the batch event carries
 * that context (the receiver's span becomes its child), or the batch's own with telemetry off.
 */
interface Finalized {
  verdict: Verdict | undefined;
  traceparent: string | undefined;
}

/**
 * Finalizes each batch at most once at a time in this process: the last coalesced progress
 * write resolves up to 32 callers with the same settled manifest, and one report is enough.
 */
export interface FinalizerOptions {
  blobs: BlobStore;
  manifests: ManifestStore;
  open: OpenBatches;
  now: () => number;
  log: Logger;
  /** Result headers this process just wrote, read from memory instead of Storage. */
  recent?: RecentResults | undefined;
  /** The outbox: its event is recorded by the write that makes the batch terminal. */
  events?: Pick<EventDelivery, 'record' | 'dispatch' | 'announce'> | undefined;
  /** @defaultValue NO_TELEMETRY */
  telemetry?: Telemetry | undefined;
  /** Takes back the scheduled watchdog check of a batch that became terminal. */
  checks?: Pick<Notifier, 'cancelChecks'> | undefined;
  /** List prices: the report carries the batch's cost so far. Absent: no cost in the report. */
  prices?: PriceSettings | undefined;
}

export class Finalizer {
  private readonly inflight = new Map<string, Promise<void>>();
  private readonly blobs: BlobStore;
  private readonly manifests: ManifestStore;
  private readonly open: OpenBatches;
  private readonly now: () => number;
  private readonly log: Logger;
  private readonly recent: RecentResults | undefined;
  private readonly events: FinalizerOptions['events'];
  private readonly telemetry: Telemetry;
  private readonly checks: FinalizerOptions['checks'];
  private readonly prices: PriceSettings | undefined;

  constructor(o: FinalizerOptions) {
    this.blobs = o.blobs;
    this.manifests = o.manifests;
    this.open = o.open;
    this.now = o.now;
    this.log = o.log;
    this.recent = o.recent;
    this.events = o.events;
    this.telemetry = o.telemetry ?? NO_TELEMETRY;
    this.checks = o.checks;
    this.prices = o.prices;
  }

  /** Finalizes `m` if it is accepted and settled; anything else is left as it is. */
  async ifSettled(m: Manifest | undefined): Promise<void> {
    if (!m || m.state !== 'accepted' || !isSettled(m)) return;
    let p = this.inflight.get(m.batchId);
    if (!p) {
      p = this.finalize(m).finally(() => this.inflight.delete(m.batchId));
      this.inflight.set(m.batchId, p);
    }
    await p;
  }

  /**
   * For a manifest about to be written: if it is accepted and settled, write the report (when
   * every chunk is done) and return it marked completed or failed, for the same write.
   */
  async settle(m: Manifest): Promise<Manifest> {
    if (m.state !== 'accepted' || !isSettled(m)) return m;
    const started = this.now();
    const finalized = await this.reportOf(m);
    return this.mark(m, this.now(), finalized, started);
  }

  /**
   * A write that made the batch terminal has landed: its event's deliveries start (in the
   * background), then its topic copy, and it leaves the open-batch index once none is pending and
   * the topic has it (a crash before this leaves a marker that recovery acts on), and a first
   * completion is logged.
   */
  async settled(m: Manifest, first = true): Promise<void> {
    if (!isTerminal(m)) return;
    this.events?.dispatch(m);
    // The index is how recovery finds an undelivered event: the topic send, or the last delivery, removes the marker.
    // announce takes the marker over until the topic has the event; a later finalize of a terminal batch
    // leaves a topic copy to the first one's process (or to recovery).
    const announced = first && this.events?.announce(m) === true;
    if (!announced && !hasPendingDeliveries(m) && topicUnsent(m).length === 0)
      await this.open
        .remove(m.batchId)
        .catch((e: unknown) =>
          this.log.warn(
            `batch ${m.batchId}: its open-index marker stays for recovery to remove: ${ensureError(e).message}`,
          ),
        );
    if (!first) return;
    this.telemetry.metrics.batchSettled(m.state === 'completed' ? 'completed' : 'failed', m.latencyMs ?? 0);
    if (m.state === 'completed')
      this.log.info(
        `batch ${m.batchId} completed: ${m.transactions} transactions in ${m.chunks} chunks, ${m.latencyMs ?? 0} ms after submission`,
      );
    // Last: a management request to Service Bus, which must not hold up telling people the batch is done.
    await this.cancelWatchdog(m);
  }

  /**
   * A terminal batch needs no watchdog: its scheduled check is cancelled, so it costs no instance
   * start when it would have come due. Only after the terminal write has landed (a crash before
   * this leaves the check, which finds the batch finished); a check that came due meanwhile, or
   * was never recorded, just finds it finished too.
   */
  private async cancelWatchdog(m: Manifest): Promise<void> {
    if (!this.checks || !m.watchdog?.length) return;
    try {
      await this.checks.cancelChecks(m.watchdog);
    } catch (e) {
      this.log.info(
        `batch ${m.batchId}: its watchdog check was not cancelled (it may have come due): ${ensureError(e).message}`,
      );
    }
  }

  /** The finalize span: a child of the batch's ingest span, beside its chunks' spans. */
  private inFinalizeSpan<T>(m: Manifest, work: (span?: SpanHandle) => Promise<T>): Promise<T> {
    if (!this.telemetry.enabled) return work(undefined);
    return this.telemetry.inSpan(
      'pushdrain.finalize',
      { parent: m.traceparent, attributes: { 'pushdrain.batch_id': m.batchId, 'pushdrain.chunks': m.chunks } },
      work,
    );
  }

  /**
   * The report of a settled batch, written in its finalize span; none for a failed batch, whose
   * finalize span ends at once with an error status (the trace shows where the batch ended).
   */
  private reportOf(m: Manifest): Promise<Finalized> {
    if (m.failed.length === 0)
      return this.inFinalizeSpan(m, async (span) => {
        const verdict = await this.writeReport(m);
        // The trace shows where the batch ended, as for failed chunks.
        if ('mismatches' in verdict) span?.fail(new Error(mismatchError(verdict.mismatches)));
        return { verdict, traceparent: span ? span.traceparent : m.traceparent };
      });
    let traceparent = m.traceparent;
    if (this.telemetry.enabled) {
      const span = this.telemetry.startSpan('pushdrain.finalize', {
        parent: m.traceparent,
        attributes: {
          'pushdrain.batch_id': m.batchId,
          'pushdrain.chunks': m.chunks,
          'pushdrain.chunks_failed': m.failed.length,
        },
      });
      span.fail(new Error(`${m.failed.length} of ${m.chunks} chunks failed: no report`));
      span.end();
      traceparent = span.traceparent;
    }
    return Promise.resolve({ verdict: undefined, traceparent });
  }

  private async finalize(m: Manifest): Promise<void> {
    const started = this.now();
    const finalized = await this.reportOf(m);
    const now = this.now();
    const updated = await this.manifests.update(m.batchId, (cur) =>
      isTerminal(cur) || cur.state !== 'accepted' ? undefined : this.mark(cur, now, finalized, started),
    );
    if (updated) await this.settled(updated.manifest, updated.manifest.completedAt === new Date(now).toISOString());
  }

  private mark(m: Manifest, now: number, { verdict, traceparent }: Finalized, started: number): Manifest {
    const report = verdict && 'report' in verdict ? verdict : undefined;
    const mismatches = verdict && 'mismatches' in verdict ? verdict.mismatches : undefined;
    const failed = m.failed.length > 0 || mismatches !== undefined;
    m.state = failed ? 'failed' : 'completed';
    m.completedAt = new Date(now).toISOString();
    m.latencyMs = now - Date.parse(m.submittedAt);
    (m.timeline ??= emptyTimeline()).finalizeMs = Math.max(0, now - started);
    if (m.failed.length > 0)
      m.error = `${m.failed.length} of ${m.chunks} chunks failed: ${m.failed
        .slice(0, 5)
        .map((f) => `chunk ${f.chunk}: ${f.reason}`)
        .join('; ')}`;
    if (mismatches) {
      m.error = mismatchError(mismatches);
      m.mismatches = mismatches;
    }
    if (report) m.reportSha256 = report.sha256;
    const event = this.events?.record(m, report?.report, traceparent);
    if (event) m.events = [...(m.events ?? []), event];
    return m;
  }

  private async header(batchId: string, chunk: number): Promise<ResultHeader> {
    const held = this.recent?.take(batchId, chunk);
    if (held !== undefined) return parseResultHeader(held);
    const got = await this.blobs.read(layout.result(batchId, chunk));
    // Written before its pointer was sent, so absence is a storage hiccup, not a state.
    if (!got) throw new TransientError(`result blob for chunk ${chunk} of ${batchId} is missing`);
    return readResultHeader(got.body);
  }

  /**
   * The report of a batch whose chunks are all done, written only once it reconciles with the
   * control totals; its sha256 is of the very bytes written, which `GET …/report` serves as they are.
   */
  private async writeReport(m: Manifest): Promise<Verdict> {
    const builder = new ReportBuilder();
    const headers = await mapLimit(m.done, READ_CONCURRENCY, (chunk) => this.header(m.batchId, chunk));
    for (const h of headers) builder.add(h.partials);
    const report: Report = { ...builder.build(m.batchId), ...(m.submitter ? { submitter: m.submitter } : {}) };
    const cost =
      this.prices && m.usage
        ? { ...batchCost(m.usage, m.transactions, this.prices), asOf: new Date(this.now()).toISOString() }
        : undefined;
    const expected = { transactions: m.transactions, ...(m.controls ? { controls: m.controls } : {}) };
    const mismatches = [...checkInputs(expected, headers), ...checkReport(expected, report)];
    if (mismatches.length > 0) {
      this.log.error(`batch ${m.batchId} fails closed: ${mismatchError(mismatches)}`);
      return { mismatches: keptMismatches(mismatches) };
    }
    return this.keptReport(cost ? { ...report, cost } : report);
  }

  /**
   * Writes the report once: its bytes carry the cost as far as this finalize counted it, so two
   * finalizers (two instances, or the watchdog) write different bytes, and the digest must be
   * of the bytes that stay. The first write stays; a later one hashes what is there. A report
   * left by an earlier batch under the same id (a reused Idempotency-Key) is replaced.
   */
  private async keptReport(report: Report): Promise<{ report: Report; sha256: string }> {
    const ref = layout.report(report.batchId);
    const bytes = Buffer.from(JSON.stringify(report), 'utf8');
    const json = { contentType: 'application/json' };
    const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
    if (await this.blobs.write(ref, bytes, { ...json, condition: { ifNoneMatch: '*' } }))
      return { report, sha256: sha256(bytes) };
    const there = await this.blobs.read(ref);
    const kept = there ? (JSON.parse(there.body.toString('utf8')) as Report) : undefined;
    if (there && kept && sameFigures(kept, report)) return { report: kept, sha256: sha256(there.body) };
    await this.blobs.write(ref, bytes, json);
    return { report, sha256: sha256(bytes) };
  }
}

/** The same batch's report: everything but when its cost was counted. */
function sameFigures(a: Report, b: Report): boolean {
  const figures = (r: Report): string =>
    JSON.stringify([r.batchId, r.submitter ?? null, r.transactions, r.rows, r.totals]);
  return figures(a) === figures(b);
}
