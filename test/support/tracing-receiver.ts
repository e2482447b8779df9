/**
 * What a batch event's receiver does with the CloudEvents distributed-tracing extension: it starts
 * its own span as a child of the event's `traceparent` (keeping its `tracestate`), with a tracer
 * provider of its own, as another service would, and the test reads the spans it ended.
 */
import { createTraceState, ROOT_CONTEXT, trace, TraceFlags } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

export class TracingReceiver {
  private readonly exporter = new InMemorySpanExporter();
  private readonly provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(this.exporter)] });

  /** Handles one event in a span continuing its trace (a new trace when it carries none). */
  handle(event: { id: string; traceparent?: unknown; tracestate?: unknown }): ReadableSpan {
    const m = typeof event.traceparent === 'string' ? TRACEPARENT.exec(event.traceparent) : null;
    const parent = m
      ? trace.setSpanContext(ROOT_CONTEXT, {
          traceId: m[1]!,
          spanId: m[2]!,
          traceFlags: parseInt(m[3]!, 16) & TraceFlags.SAMPLED,
          isRemote: true,
          ...(typeof event.tracestate === 'string' ? { traceState: createTraceState(event.tracestate) } : {}),
        })
      : ROOT_CONTEXT;
    const span = this.provider
      .getTracer('receiver')
      .startSpan('receiver.handle', { attributes: { 'event.id': event.id } }, parent);
    span.end();
    const ended = this.exporter.getFinishedSpans().find((s) => s.spanContext().spanId === span.spanContext().spanId);
    if (!ended) throw new Error('the receiver span was not exported');
    return ended;
  }

  shutdown(): Promise<void> {
    return this.provider.shutdown();
  }
}
