/**
 * Operation counters by kind. The benchmark reads them around an idle window to count
 * the Service Bus operations an idle app costs, so every wire-level operation is counted.
 */
const STAT_KINDS = [
  'connections',
  'attach',
  'detach',
  'cbs',
  'send',
  'messagesIn',
  'flow',
  'drain',
  'deliver',
  'complete',
  'abandon',
  'deadletter',
  'defer',
  'management',
  'lockExpired',
  'expired',
  'serverBusy',
  'dropped',
] as const;

export type StatKind = (typeof STAT_KINDS)[number];

/** Every known kind is always present; `management:<operation>` keys appear once used. */
export type StatsSnapshot = Record<StatKind, number> & Record<string, number>;

export class Stats {
  private counts = new Map<string, number>();

  /** `management:<operation>` keys count each management operation separately. */
  inc(kind: StatKind | `management:${string}`, n = 1): void {
    this.counts.set(kind, (this.counts.get(kind) ?? 0) + n);
  }

  /** A plain object with every known kind (zero when unused) plus any per-operation keys. */
  snapshot(): StatsSnapshot {
    const out = Object.fromEntries(STAT_KINDS.map((k) => [k, 0])) as StatsSnapshot;
    for (const [k, v] of this.counts) out[k] = v;
    return out;
  }

  reset(): void {
    this.counts = new Map();
  }
}
