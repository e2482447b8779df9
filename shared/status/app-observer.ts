/**
 * The one observer of what the app does: each event feeds both the status history (Activity,
 * this instance's buckets) and the `pushdrain.*` metrics, so the two never count differently.
 */
import type { PipelineMetrics } from '../telemetry/telemetry';
import type { Activity } from './activity';

export class AppObserver {
  constructor(
    private readonly activity: Activity,
    private readonly metrics: PipelineMetrics,
  ) {}

  /** Storage requests counted by the meter, by operation. */
  storage(operation: string, count: number): void {
    this.activity.storage(count);
    this.metrics.storage(operation, count);
  }

  /** A queue's approximate depth, as a read returned it. */
  queueDepth(queue: string, depth: number): void {
    this.activity.depths({ [queue]: depth });
    this.metrics.queueDepth(queue, depth);
  }

  /** Drain invocations running in this process now. */
  drainsRunning(count: number): void {
    this.activity.drains(count);
    this.metrics.drainsInProgress(count);
  }

  /** A new batch was accepted (a replay is not a new batch). */
  accepted(source: 'http' | 'sweep', transactions: number): void {
    this.activity.accepted(transactions);
    this.metrics.batchAccepted(source, transactions);
  }

  /** Work happened that was not inside during() (a sweep that found something). */
  worked(): void {
    this.activity.worked();
  }

  /** Work in flight: the status history counts idle time (and what it costs) only without any. */
  during<T>(work: () => Promise<T>): Promise<T> {
    return this.activity.during(work);
  }
}
