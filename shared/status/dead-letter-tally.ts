/**
 * The dead-letter counts GET /api/health shows, from memory. They come from the last status
 * report (which peeks every entity anyway), a redrive, or a recount that a health call starts
 * when the counts are older than `maxAgeMs`: at most one recount per interval and instance,
 * however often health is probed, and none while nothing calls health or status (idle costs
 * no Service Bus operation). Health never waits for Service Bus: a recount it starts shows in
 * the next answer.
 */
import { ensureError } from '../errors';
import type { DeadLetterCount } from '../notify/dead-letters';
import type { BusInspection, BusInspector } from '../notify/inspection';
import type { Logger } from '../ports';

/** Counts only: the health route is anonymous, so no body, reason or error text. */
export interface DeadLetterHealth {
  /** Dead letters over the app's entities at the last count; null before the first count. */
  total: number | null;
  /** An entity had more than the count limit: there are at least `total`. */
  atLeast: boolean;
  /** Per entity; null where the entity could not be counted. */
  byEntity: Record<string, number | null>;
  countedAt: string | null;
  ageSeconds: number | null;
}

export interface TallyDeps {
  /** A recount (peeks); undefined: only status reports and redrives feed the tally. */
  count: (() => Promise<DeadLetterCount[]>) | undefined;
  now: () => number;
  log: Logger;
  /** Counts older than this make a health call start a recount. @defaultValue 300000 (5 min) */
  maxAgeMs?: number;
  /** Each count taken, as its total (the dead-letter metric). */
  onCount?: (total: number) => void;
}

const DEAD_LETTER_MAX_AGE_MS = 5 * 60_000;

export class DeadLetterTally {
  private last: { at: number; counts: readonly DeadLetterCount[] } | undefined;
  private recount: Promise<void> | undefined;
  private readonly maxAgeMs: number;

  constructor(private readonly deps: TallyDeps) {
    this.maxAgeMs = deps.maxAgeMs ?? DEAD_LETTER_MAX_AGE_MS;
  }

  /** Counts taken at `at` (when the count started); an older count never replaces a newer one. */
  record(counts: readonly DeadLetterCount[], at: number): void {
    if (!this.last || at >= this.last.at) this.last = { at, counts };
    else return;
    this.deps.onCount?.(counts.reduce((n, c) => n + (c.error === undefined ? c.deadLetters : 0), 0));
  }

  /** What GET /api/health shows; makes no request. */
  snapshot(): DeadLetterHealth {
    const last = this.last;
    if (!last) return { total: null, atLeast: false, byEntity: {}, countedAt: null, ageSeconds: null };
    const counted = last.counts.filter((c) => c.error === undefined);
    return {
      total: counted.reduce((n, c) => n + c.deadLetters, 0),
      atLeast: counted.some((c) => c.truncated),
      byEntity: Object.fromEntries(last.counts.map((c) => [c.entity, c.error === undefined ? c.deadLetters : null])),
      countedAt: new Date(last.at).toISOString(),
      ageSeconds: Math.max(0, Math.round((this.deps.now() - last.at) / 1000)),
    };
  }

  /** A health call: starts a recount when the counts are missing or older than maxAgeMs; never waits for it. */
  refreshIfStale(): void {
    if (this.last && this.deps.now() - this.last.at < this.maxAgeMs) return;
    void this.refresh();
  }

  /** Recounts now (one at a time; callers share it). Failures are logged, the old counts stay. */
  refresh(): Promise<void> {
    const count = this.deps.count;
    if (!count) return Promise.resolve();
    this.recount ??= (async () => {
      const at = this.deps.now();
      try {
        this.record(await count(), at);
      } catch (e) {
        this.deps.log.warn(`dead-letter count failed: ${ensureError(e).message}`);
      }
    })().finally(() => (this.recount = undefined));
    return this.recount;
  }

  /** Waits for a recount in flight (before its client closes). */
  async close(): Promise<void> {
    await this.recount;
  }

  /** The inspector the status report uses, recording its dead-letter counts here as a side effect. */
  recording(inspector: BusInspector): BusInspector {
    return {
      inspect: async (): Promise<BusInspection> => {
        const at = this.deps.now();
        const inspection = await inspector.inspect();
        if (inspection.available) {
          this.record(
            inspection.entities.map((e) => ({
              entity: e.entity,
              deadLetters: e.deadLetters,
              truncated: e.deadLettersTruncated,
              ...(e.error !== undefined ? { error: e.error } : {}),
            })),
            at,
          );
        }
        return inspection;
      },
      close: () => inspector.close(),
    };
  }
}
