/**
 * The Telemetry port over the OpenTelemetry API. Loaded only when telemetry is on (see
 * start-telemetry.ts); the providers come from whoever set the SDK up (OTLP, Azure Monitor, or
 * a test's in-memory exporter). Trace context is passed explicitly as W3C `traceparent`
 * strings, so a span's parent never depends on which async context a callback runs in.
 */
import {
  type Context,
  context,
  type Meter,
  type MeterProvider,
  ROOT_CONTEXT,
  type Span,
  SpanStatusCode,
  trace,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';

import { redactSecrets } from '../redaction';
import { OtelMetrics } from './otel-metrics';
import type { Attributes, SpanHandle, SpanOptions, Telemetry } from './telemetry';
import { checkedTraceparent } from './telemetry';

const SCOPE = 'pushdrain';
/** Links one drain span keeps: a drain of thousands of chunks serves a few batches, not thousands. */
const MAX_LINKS = 32;

export interface OtelTelemetryOptions {
  tracerProvider: TracerProvider;
  meterProvider: MeterProvider;
  destination: string;
  shutdown: () => Promise<void>;
}

function parentContext(traceparent: string | undefined): Context | undefined {
  const tp = checkedTraceparent(traceparent);
  if (!tp) return undefined;
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: tp.slice(3, 35),
    spanId: tp.slice(36, 52),
    traceFlags: parseInt(tp.slice(53, 55), 16),
    isRemote: true,
  });
}

function spanContextOf(traceparent: string) {
  const ctx = parentContext(traceparent);
  return ctx && trace.getSpanContext(ctx);
}

function traceparentOf(span: Span): string {
  const c = span.spanContext();
  return `00-${c.traceId}-${c.spanId}-${c.traceFlags.toString(16).padStart(2, '0')}`;
}

class OtelSpan implements SpanHandle {
  private linked: Set<string> | undefined;

  constructor(readonly span: Span) {}

  get traceparent(): string {
    return traceparentOf(this.span);
  }

  set(key: string, value: string | number | boolean): void {
    this.span.setAttribute(key, value);
  }

  event(name: string, attributes?: Attributes): void {
    this.span.addEvent(name, attributes);
  }

  link(traceparent: string): void {
    const target = spanContextOf(traceparent);
    if (!target) return;
    this.linked ??= new Set();
    if (this.linked.size >= MAX_LINKS || this.linked.has(target.traceId)) return;
    this.linked.add(target.traceId);
    this.span.addLink({ context: target });
  }

  fail(error: unknown): void {
    const e = error instanceof Error ? error : new Error(String(error));
    // An exported span leaves the app: the same masks as a log line (a webhook URL, a token).
    const message = redactSecrets(e.message);
    this.span.recordException({ name: e.name, message, ...(e.stack ? { stack: redactSecrets(e.stack) } : {}) });
    this.span.setStatus({ code: SpanStatusCode.ERROR, message });
  }

  end(): void {
    this.span.end();
  }
}

/** The spans this module made, by their SDK span, so a nested step can find its drain's handle. */
const handles = new WeakMap<Span, OtelSpan>();

export class OtelTelemetry implements Telemetry {
  readonly enabled = true;
  readonly destination: string;
  readonly metrics: OtelMetrics;
  private readonly tracer: Tracer;
  private readonly meter: Meter;
  private readonly stop: () => Promise<void>;

  constructor(options: OtelTelemetryOptions) {
    this.tracer = options.tracerProvider.getTracer(SCOPE);
    this.meter = options.meterProvider.getMeter(SCOPE);
    this.metrics = new OtelMetrics(this.meter);
    this.destination = options.destination;
    this.stop = options.shutdown;
  }

  startSpan(name: string, options: SpanOptions = {}): OtelSpan {
    const parent = parentContext(options.parent) ?? context.active();
    // The step this span runs within (a drain invocation) links to the batch it now serves.
    const outer = handles.get(trace.getSpan(context.active()) as Span);
    if (outer && options.parent) outer.link(options.parent);
    const span = this.tracer.startSpan(name, options.attributes ? { attributes: options.attributes } : {}, parent);
    const handle = new OtelSpan(span);
    handles.set(span, handle);
    return handle;
  }

  async inSpan<T>(name: string, options: SpanOptions, work: (span: SpanHandle) => Promise<T>): Promise<T> {
    const handle = this.startSpan(name, options);
    try {
      return await context.with(trace.setSpan(context.active(), handle.span), () => work(handle));
    } catch (e) {
      handle.fail(e);
      throw e;
    } finally {
      handle.end();
    }
  }

  batchEvent(traceparent: string | undefined, name: string, attributes?: Attributes): void {
    const parent = parentContext(traceparent);
    if (!parent) return;
    const span = this.tracer.startSpan(name, attributes ? { attributes } : {}, parent);
    span.addEvent(name, attributes);
    span.end();
  }

  shutdown(): Promise<void> {
    return this.stop();
  }
}
