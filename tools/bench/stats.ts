/**
 * The few statistics the bench reports. Every figure is a median over repetitions with its
 * min and max; latencies are percentiles over trials. Nearest-rank percentiles: with a
 * handful of trials an interpolated p95 would invent a value nobody measured.
 */

export interface Summary {
  median: number;
  min: number;
  max: number;
  /** The per-repetition values, in run order. */
  runs: number[];
}

function sorted(values: readonly number[]): number[] {
  return [...values].sort((a, b) => a - b);
}

/** Nearest-rank percentile (p in 0..100) of a non-empty list. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const s = sorted(values);
  const rank = Math.min(s.length, Math.max(1, Math.ceil((p / 100) * s.length)));
  return s[rank - 1] as number;
}

/** Median of a non-empty list (mean of the two middle values for an even count). */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const s = sorted(values);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

export function summarize(runs: readonly number[]): Summary {
  if (runs.length === 0) return { median: Number.NaN, min: Number.NaN, max: Number.NaN, runs: [] };
  const s = sorted(runs);
  return { median: median(runs), min: s[0] as number, max: s[s.length - 1] as number, runs: [...runs] };
}

/**
 * pushdrain ÷ baseline for each repetition that measured both (same run, same data), then
 * summarized. Undefined where a repetition lacks either side or the baseline is zero.
 */
export function ratioSummary(ours: readonly number[], theirs: readonly number[]): Summary | undefined {
  const ratios: number[] = [];
  for (let i = 0; i < Math.min(ours.length, theirs.length); i++) {
    const a = ours[i] as number;
    const b = theirs[i] as number;
    if (Number.isFinite(a) && Number.isFinite(b) && b !== 0) ratios.push(a / b);
  }
  return ratios.length > 0 ? summarize(ratios) : undefined;
}
