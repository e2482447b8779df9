/**
 * How late this process's event loop runs timers (perf_hooks.monitorEventLoopDelay): the lease
 * renewals and visibility extensions are timers, so this is how late they can be. One histogram
 * per process, started on first use; `p99Ms` and `maxMs` cover everything since then.
 */
import { type IntervalHistogram, monitorEventLoopDelay } from 'node:perf_hooks';

/** The sampling timer's period: finer costs more wake-ups, coarser hides short stalls. */
const RESOLUTION_MS = 20;

let histogram: IntervalHistogram | undefined;

export interface EventLoopDelay {
  p99Ms: number;
  maxMs: number;
}

export function eventLoopDelay(): EventLoopDelay {
  if (!histogram) {
    histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
    histogram.enable();
  }
  // Nanoseconds; the histogram counts the resolution itself as delay, so take it off.
  const ms = (ns: number): number => Math.max(0, Math.round(ns / 1e6 - RESOLUTION_MS));
  return histogram.count === 0
    ? { p99Ms: 0, maxMs: 0 }
    : { p99Ms: ms(histogram.percentile(99)), maxMs: ms(histogram.max) };
}
