/**
 * The app's telemetry port: spans on a batch's trace and the `pushdrain.*` metrics, in plain
 * types. The pipeline talks only to this interface; with telemetry off it gets NO_TELEMETRY,
 * whose methods do nothing and allocate nothing, and no OpenTelemetry module is ever loaded
 * (start-telemetry.ts loads the SDK on demand).
 */

/** Span and metric attribute values; keep them low-cardinality on metrics (never a batch id). */
export type Attributes = Record<string, string | number | boolean>;

export interface SpanOptions {
  /** W3C `traceparent` of the parent; without it the span continues the active context (or starts a trace). */
  parent?: string | undefined;
  attributes?: Attributes;
}

/** A span in progress. */
export interface SpanHandle {
  /** This span's W3C `traceparent`, for the next hop; with telemetry off, the parent passed through. */
  readonly traceparent: string | undefined;
  set(key: string, value: string | number | boolean): void;
  event(name: string, attributes?: Attributes): void;
  /** Links this span to another trace (a drain that serves many batches links to each). */
  link(traceparent: string): void;
  fail(error: unknown): void;
  end(): void;
}

/** The `pushdrain.*` instruments (see otel-metrics.ts for names and units). */
export interface PipelineMetrics {
  batchAccepted(source: string, transactions: number): void;
  /** A batch became completed or failed, `ms` after submission. */
  batchSettled(state: 'completed' | 'failed', ms: number): void;
  billed(transactions: number): void;
  storage(operation: string, count: number): void;
  queueDepth(queue: string, depth: number): void;
  poisoned(stage: string): void;
  deadLetters(count: number): void;
  drainsInProgress(count: number): void;
  fanOut(events: number): void;
  /** The watchdog found a batch stalled (no progress within its SLA) and acted on it. */
  stalled(action: string): void;
  /** One attempt of a batch event's delivery was recorded: `retry` failed and is scheduled again. */
  delivery(outcome: 'delivered' | 'retry' | 'gone' | 'poisoned', targetKind: 'webhook' | 'callback' | 'topic'): void;
  /** A drain of `stage` processed `count` messages that another delivery had too (work done twice). */
  drainDuplicates(stage: string, count: number): void;
  /** A drain round of `stage` lost its slot lease to another drain. */
  leaseLost(stage: string): void;
}

export interface Telemetry {
  readonly enabled: boolean;
  /** For `npm start` and the logs: where spans and metrics go, or "telemetry off". */
  readonly destination: string;
  readonly metrics: PipelineMetrics;
  startSpan(name: string, options?: SpanOptions): SpanHandle;
  /** Runs `work` in a span that is the active context meanwhile (SDK calls inside become its children). */
  inSpan<T>(name: string, options: SpanOptions, work: (span: SpanHandle) => Promise<T>): Promise<T>;
  /**
   * Records `name` as a span event on the batch's trace (a short span under `traceparent`, since
   * the batch's own spans have ended): poison, watchdog and recovery actions.
   */
  batchEvent(traceparent: string | undefined, name: string, attributes?: Attributes): void;
  /** Exports what is buffered and stops. */
  shutdown(): Promise<void>;
}

const NOOP_METRICS: PipelineMetrics = {
  batchAccepted: () => {},
  batchSettled: () => {},
  billed: () => {},
  storage: () => {},
  queueDepth: () => {},
  poisoned: () => {},
  deadLetters: () => {},
  drainsInProgress: () => {},
  fanOut: () => {},
  stalled: () => {},
  delivery: () => {},
  drainDuplicates: () => {},
  leaseLost: () => {},
};

/** With telemetry off a span is its parent passed through, so trace context still travels unchanged. */
class PassThroughSpan implements SpanHandle {
  constructor(readonly traceparent: string | undefined) {}
  set(): void {}
  event(): void {}
  link(): void {}
  fail(): void {}
  end(): void {}
}

const ROOTLESS = new PassThroughSpan(undefined);

export const NO_TELEMETRY: Telemetry = {
  enabled: false,
  destination: 'telemetry off',
  metrics: NOOP_METRICS,
  startSpan: (_name, options) => (options?.parent === undefined ? ROOTLESS : new PassThroughSpan(options.parent)),
  inSpan: (name, options, work) => work(NO_TELEMETRY.startSpan(name, options)),
  batchEvent: () => {},
  shutdown: () => Promise.resolve(),
};

const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/**
 * A W3C traceparent (version 00) as a client or a message sent it, or undefined: anything else is
 * dropped rather than carried into manifests and pointers.
 */
export function checkedTraceparent(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const v = value.trim().toLowerCase();
  if (!TRACEPARENT.test(v) || v.slice(3, 35) === '0'.repeat(32) || v.slice(36, 52) === '0'.repeat(16)) return undefined;
  return v;
}
