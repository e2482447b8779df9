/** Scenario 12's figures (batch events to a webhook) and its section of the report. */
import type { MeterSnapshot } from '../../shared/storage/meter';
import type { WebhooksConfig, WebhooksRun } from './scenarios/webhooks';
import { percentile, summarize, type Summary } from './stats';

export interface WebhooksFigures {
  trials: number;
  batchSize: number;
  gapsMs: { min: number; max: number; cold: number };
  /** completedAt → received, per repetition. */
  p50: Summary;
  p95: Summary;
  max: Summary;
  /** p50 of the batches that found the connection kept, and of those that came after the cold gap. */
  keptP50: Summary;
  coldP50: Summary;
  /** Requests per event: above 1 means retries or duplicates. */
  requestsPerEvent: Summary;
  unverified: number;
  /** Idle with webhooks configured, per hour: queue and blob transactions, Service Bus messages sent. */
  idle: { windowSeconds: number; queuePerHour: Summary; blobPerHour: Summary; serviceBusPerHour: Summary };
}

function sum(s: MeterSnapshot, prefix: string): number {
  return Object.entries(s).reduce((a, [op, n]) => (op.startsWith(prefix) ? a + n : a), 0);
}

export function webhooksFigures(runs: readonly WebhooksRun[], cfg: WebhooksConfig): WebhooksFigures {
  const perHour = (r: WebhooksRun, n: number): number => (n * 3_600_000) / r.idle.windowMs;
  return {
    trials: runs.reduce((a, r) => a + r.trials.length, 0),
    batchSize: cfg.batchSize,
    gapsMs: { min: cfg.gapMinMs, max: cfg.gapMaxMs, cold: cfg.coldGapMs },
    p50: summarize(
      runs.map((r) =>
        percentile(
          r.trials.map((t) => t.latencyMs),
          50,
        ),
      ),
    ),
    p95: summarize(
      runs.map((r) =>
        percentile(
          r.trials.map((t) => t.latencyMs),
          95,
        ),
      ),
    ),
    max: summarize(runs.map((r) => Math.max(...r.trials.map((t) => t.latencyMs)))),
    keptP50: summarize(
      runs.map((r) =>
        percentile(
          r.trials.filter((t) => !t.cold).map((t) => t.latencyMs),
          50,
        ),
      ),
    ),
    coldP50: summarize(
      runs.map((r) =>
        percentile(
          r.trials.filter((t) => t.cold).map((t) => t.latencyMs),
          50,
        ),
      ),
    ),
    requestsPerEvent: summarize(
      runs.map((r) => r.trials.reduce((a, t) => a + t.requests, 0) / Math.max(1, r.trials.length)),
    ),
    unverified: runs.reduce((a, r) => a + r.unverified, 0),
    idle: {
      windowSeconds: (runs[0]?.idle.windowMs ?? 0) / 1000,
      queuePerHour: summarize(runs.map((r) => perHour(r, sum(r.idle.storage, 'queue.')))),
      blobPerHour: summarize(runs.map((r) => perHour(r, sum(r.idle.storage, 'blob.')))),
      serviceBusPerHour: summarize(runs.map((r) => perHour(r, r.idle.serviceBusSent))),
    },
  };
}

function n0(v: number): string {
  return Math.round(v).toLocaleString('en-US');
}

function fmt(s: Summary): string {
  return s.runs.length > 1 ? `${n0(s.median)} (${n0(s.min)}–${n0(s.max)})` : n0(s.median);
}

export function webhooksSection(w: WebhooksFigures): string {
  const rpe = w.requestsPerEvent.median.toFixed(2);
  return [
    '| batches | batch | completion → webhook received p50 (ms) | p95 (ms) | max (ms) | p50, connection kept (ms) | p50, after the cold gap (ms) | requests per event | idle queue tx per hour | idle blob tx per hour | idle Service Bus sends per hour |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    `| ${w.trials} | ${n0(w.batchSize)} | ${fmt(w.p50)} | ${fmt(w.p95)} | ${fmt(w.max)} | ${fmt(w.keptP50)} | ${fmt(w.coldP50)} | ${rpe} | ${fmt(w.idle.queuePerHour)} | ${fmt(w.idle.blobPerHour)} | ${fmt(w.idle.serviceBusPerHour)} |`,
    '',
    `One app (as deployed, with the \`batch-events\` topic) with PUSHDRAIN_WEBHOOK_URL on a receiver on 127.0.0.1 that verifies each request with \`standardwebhooks\`; batches one at a time, each after the previous event arrived: alternately ${w.gapsMs.min}–${w.gapsMs.max} ms later (the app's connection to the receiver is kept) and ${w.gapsMs.cold} ms later (past the 4 s a kept connection lives idle, as for batches minutes apart). Completion is the event's \`time\` (the manifest's \`completedAt\`, stamped before the terminal write); received is the receiver's clock once it has the whole request (same machine). Idle: ${n0(w.idle.windowSeconds)} s after the app's meter went quiet, scaled to an hour (the sweep timer is the idle scenario's figure; webhooks do not change it).${w.unverified > 0 ? ` **${w.unverified} requests failed verification.**` : ''}`,
  ].join('\n');
}
