/**
 * How long `submit` waits between two looks at its batch (`GET /api/batches/{id}`, one Storage read
 * each). A fixed interval pays for every look of a long batch; this one grows with the batch's age
 * (a tenth of it: the end is noticed at most about 10 % late) and, on top, by half again for each
 * answer in a row that was unchanged (a 304), up to MAX_WAIT_MS (a `--poll` above it is taken as given).
 */

/** The longest wait: the end of a batch is never noticed more than this late. */
export const MAX_WAIT_MS = 5000;

export interface PollState {
  /** The shortest wait (`--poll`). */
  minMs: number;
  /** Since the wait began. */
  elapsedMs: number;
  /** Answers in a row that said nothing changed. */
  unchanged: number;
}

export function nextPollMs({ minMs, elapsedMs, unchanged }: PollState): number {
  const grown = Math.max(minMs, elapsedMs / 10) * 1.5 ** Math.min(unchanged, 10);
  return Math.round(Math.max(minMs, Math.min(MAX_WAIT_MS, grown)));
}
