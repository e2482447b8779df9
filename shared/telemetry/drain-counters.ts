/**
 * The drain coordinator's duplicates and lost leases as `pushdrain.drain.*` metrics, by stage:
 * the queue a drain served names its stage (a partition's queue name would multiply the series).
 */
import type { DrainCounterHook } from '../drain/coordinator';
import type { Stage } from '../names';
import type { PipelineMetrics } from './telemetry';

export function drainCounters(
  metrics: PipelineMetrics,
  stageOf: (queue: string) => Stage | undefined,
): DrainCounterHook {
  return {
    duplicates: (queue, count) => metrics.drainDuplicates(stageOf(queue) ?? 'map', count),
    leaseLost: (queue) => metrics.leaseLost(stageOf(queue) ?? 'map'),
  };
}
