/**
 * The coordinator's duplicate and lost-lease hook, as the composition root wires it, read back
 * through the SDK's own metric reader: counts by stage (the queue's partition is not a series),
 * with their units. The hook itself is driven by real drains in test/drain/overload.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';

import { entityNames } from '../../../shared/names';
import { drainCounters } from '../../../shared/telemetry/drain-counters';
import { METRICS, OtelMetrics } from '../../../shared/telemetry/otel-metrics';

class Reader extends MetricReader {
  protected onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

describe('drain duplicates and lost leases as metrics', () => {
  test('pushdrain.drain.duplicates and pushdrain.drain.leases_lost count by stage, with units', async () => {
    const reader = new Reader();
    const provider = new MeterProvider({ readers: [reader] });
    const names = entityNames('t-', 3);
    const hook = drainCounters(new OtelMetrics(provider.getMeter('test')), names.stageOf);
    hook.duplicates?.(names.inputQueue(0), 2);
    hook.duplicates?.(names.inputQueue(2), 1);
    hook.duplicates?.(names.resultsQueue, 4);
    hook.leaseLost?.(names.inputQueue(1));
    hook.leaseLost?.(names.resultsQueue);
    hook.leaseLost?.(names.resultsQueue);
    const { resourceMetrics } = await reader.collect();
    const metrics = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics);
    const byStage = (name: string): { unit: string; points: Record<string, number> } => {
      const m = metrics.find((x) => x.descriptor.name === name);
      assert.ok(m, `${name} collected`);
      return {
        unit: m.descriptor.unit,
        points: Object.fromEntries(m.dataPoints.map((p) => [String(p.attributes.stage), Number(p.value)])),
      };
    };
    assert.deepEqual(byStage(METRICS.drainDuplicates), { unit: '{message}', points: { map: 3, reduce: 4 } });
    assert.deepEqual(byStage(METRICS.drainLeasesLost), { unit: '{lease}', points: { map: 1, reduce: 2 } });
    await provider.shutdown();
  });
});
