/**
 * One trace per batch, against real Azurite: an in-memory span exporter (the SDK's own) behind
 * the app's OpenTelemetry port. A batch of 20 chunks, sent with a client `traceparent`, is
 * drained by two instances through a fan-out, reduced and finalized; every step's span is in
 * the client's trace with the right parent, and each drain's span links to the batch.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { context, metrics } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';

import { DIAGNOSTIC_ID } from '../../shared/bus/outgoing-message';
import { workDetectedOutgoing } from '../../shared/bus/work-detected';
import { createApp } from '../../shared/create-app';
import { parseWorkPointer } from '../../shared/model/chunk-codec';
import { OtelTelemetry } from '../../shared/telemetry/otel-telemetry';
import { checkedTraceparent } from '../../shared/telemetry/telemetry';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { CapturingPublisher } from '../support/capturing-publisher';
import { invalidOnPurpose } from '../support/invalid-on-purpose';
import { completed, post, pump } from '../support/invoke';
import { quietLog, testRuntime, useStorage } from '../support/storage';

useStorage();

const CLIENT_TRACE = '0af7651916cd43dd8448eb211c80319c';
const CLIENT_SPAN = 'b7ad6b7169203331';
const CLIENT = `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`;

const exporter = new InMemorySpanExporter();
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const contextManager = new AsyncLocalStorageContextManager();
const telemetry = new OtelTelemetry({
  tracerProvider,
  meterProvider: new MeterProvider(),
  destination: 'in memory',
  shutdown: () => tracerProvider.shutdown(),
});

before(() => {
  context.setGlobalContextManager(contextManager.enable());
});
after(async () => {
  await telemetry.shutdown();
  context.disable();
  metrics.disable();
});

async function waitFor<T>(what: string, probe: () => T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let i = 0; Date.now() < deadline && i < 10_000; i++) {
    const got = probe();
    if (got !== undefined) return got;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const named = (name: string): ReadableSpan[] => exporter.getFinishedSpans().filter((s) => s.name === name);
const parentOf = (s: ReadableSpan): string | undefined => s.parentSpanContext?.spanId;

describe('one trace per batch', () => {
  test('ingest, every chunk map on two instances, every reduce and the finalize are one trace that continues the client traceparent', async () => {
    exporter.reset();
    const { app, parts, events, observer, raw } = await testRuntime(
      {
        PUSHDRAIN_PARTITIONS: '1',
        PUSHDRAIN_CHUNK_SIZE: '10',
        PUSHDRAIN_MESSAGES_PER_DRAIN: '2',
        PUSHDRAIN_DRAIN_SLOTS: '4',
        PUSHDRAIN_MESSAGES_PER_TASK: '4',
        PUSHDRAIN_MAX_DEQUEUE_TASKS: '1',
        PUSHDRAIN_DEQUEUE_BATCH_SIZE: '1',
      },
      { telemetry },
    );
    const second = createApp(parts.settings, { publisher: new CapturingPublisher(), log: quietLog, telemetry });
    try {
      const res = await post(app, toNdjson(generate(200, 31, 30)), { traceparent: CLIENT });
      assert.equal(res.status, 202);
      const { batchId } = res.jsonBody as { batchId: string };

      // The ingest span continues the client's trace; its context is on the manifest, the pointers and the event.
      const [ingest] = named('pushdrain.ingest');
      assert.ok(ingest);
      assert.equal(ingest.spanContext().traceId, CLIENT_TRACE);
      assert.equal(parentOf(ingest), CLIENT_SPAN);
      assert.equal(ingest.attributes['pushdrain.batch_id'], batchId);
      const batchContext = `00-${CLIENT_TRACE}-${ingest.spanContext().spanId}-01`;
      assert.equal((await parts.manifests.read(batchId))?.manifest.traceparent, batchContext);
      const queue = parts.names.inputQueue(0);
      const peeked = await raw.queue(queue).peekMessages({ numberOfMessages: 1 });
      assert.equal(parseWorkPointer(peeked.peekedMessageItems[0]!.messageText).traceparent, batchContext);
      const [wake] = events.take().filter((c) => c.event.role === 'input');
      assert.ok(wake);
      assert.equal(wake.event.traceparent, batchContext);
      const wire = workDetectedOutgoing(wake.event);
      assert.equal(wire.applicationProperties[DIAGNOSTIC_ID], batchContext, 'on the wire as Diagnostic-Id');
      assert.equal((wire.body as Record<string, unknown>).traceparent, undefined, 'not in the body');

      // The leader fans out; a second instance drains a share with its own slot.
      const leader = app.drain(wake.event);
      const fanOuts = await waitFor('fan-out events', () => {
        const got = events.all.filter((c) => c.event.fanOut);
        return got.length > 0 ? got : undefined;
      });
      const other = second.drain(fanOuts[1]!.event);
      const held = app.drain(fanOuts[0]!.event);
      assert.equal((await other).kind, 'drained');
      assert.equal((await leader).kind, 'drained');
      await held;
      assert.ok(second.health().drains.processed.map > 0, 'the second instance billed a share');
      assert.equal(app.health().drains.processed.map + second.health().drains.processed.map, 20);
      await app.drain(fanOuts[2]!.event);
      await pump(app, events, () => completed(observer, batchId));

      const spans = exporter.getFinishedSpans();
      const maps = named('pushdrain.map');
      const reduces = named('pushdrain.reduce');
      const finals = named('pushdrain.finalize');
      assert.deepEqual(
        maps.map((s) => s.attributes['pushdrain.chunk']).sort((a, b) => Number(a) - Number(b)),
        Array.from({ length: 20 }, (_, i) => i),
        'one map span per chunk',
      );
      assert.equal(reduces.length, 20, 'one reduce span per result');
      assert.equal(finals.length, 1);
      for (const s of [...maps, ...reduces, ...finals]) {
        assert.equal(s.spanContext().traceId, CLIENT_TRACE, `${s.name} is in the batch's trace`);
        assert.equal(s.attributes['pushdrain.batch_id'], batchId);
      }
      for (const m of maps) assert.equal(parentOf(m), ingest.spanContext().spanId, 'map ← ingest');
      const mapOf = new Map(maps.map((m) => [m.attributes['pushdrain.chunk'], m.spanContext().spanId]));
      for (const r of reduces)
        assert.equal(parentOf(r), mapOf.get(r.attributes['pushdrain.chunk']), 'reduce ← the map of its chunk');
      assert.equal(parentOf(finals[0]!), ingest.spanContext().spanId, 'finalize ← ingest');

      // Each drain invocation is its own trace, linked to the batch it served.
      const drains = named('pushdrain.drain');
      assert.ok(drains.length >= 3);
      for (const d of drains) assert.notEqual(d.spanContext().traceId, CLIENT_TRACE);
      const serving = drains.filter((d) => d.links.some((l) => l.context.traceId === CLIENT_TRACE));
      const stages = new Set(serving.map((d) => d.attributes['pushdrain.stage']));
      assert.deepEqual([...stages].sort(), ['map', 'reduce'], 'map and reduce drains link to the batch');
      assert.ok(
        serving.some(
          (d) => d.attributes['pushdrain.stage'] === 'map' && d.attributes['pushdrain.outcome'] === 'drained',
        ),
      );
      // Nothing of the batch's trace is left unparented apart from the client's own span.
      const inTrace = spans.filter((s) => s.spanContext().traceId === CLIENT_TRACE);
      assert.equal(inTrace.length, 1 + 20 + 20 + 1);
    } finally {
      await second.close();
    }
  });

  test('without a client traceparent the batch starts its own trace; a malformed one is not carried', async () => {
    exporter.reset();
    const { app, parts } = await testRuntime({ PUSHDRAIN_CHUNK_SIZE: '10' }, { telemetry });
    const res = await post(
      app,
      toNdjson(generate(15, 7, 3)),
      invalidOnPurpose({ traceparent: '00-zz-not-a-context-01' }),
    );
    assert.equal(res.status, 202);
    const { batchId } = res.jsonBody as { batchId: string };
    const [ingest] = named('pushdrain.ingest');
    assert.ok(ingest);
    assert.equal(ingest.parentSpanContext, undefined, 'a root span');
    const tp = (await parts.manifests.read(batchId))?.manifest.traceparent;
    assert.equal(checkedTraceparent(tp), tp);
    assert.ok(tp?.includes(ingest.spanContext().traceId));
  });
});
