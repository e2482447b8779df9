/**
 * A stand-in for the Functions scale controller's target-based rule, for local runs:
 *   desired = ceil(active messages in the subscription ÷ target executions per instance),
 * where the target is host.json's maxConcurrentCalls, summed over the app's Service Bus
 * triggered functions (the documented rule when several functions ask to scale out at once);
 * at most 4 instances are added per decision; an instance is removed only when fewer are desired and it has been idle (no drain
 * in progress) for the cool-down. The real controller's timings differ (it decides every few
 * seconds and scales in after minutes); the rule is the documented one.
 */
import type { InstanceActivity } from './instance';

export interface PlatformRule {
  /** Target executions per instance: host.json extensions.serviceBus.maxConcurrentCalls. */
  targetPerInstance: number;
  /** Instances added per decision at most (the documented 4). */
  maxStep: number;
  minInstances: number;
  maxInstances: number;
  /** An instance idle this long may be removed. */
  coolDownMs: number;
}

/** Active messages per function → instances, within the bounds. */
export function desiredInstances(active: Readonly<Record<string, number>>, rule: PlatformRule): number {
  const wanted = Object.values(active).reduce((a, n) => a + Math.ceil(n / rule.targetPerInstance), 0);
  return Math.min(rule.maxInstances, Math.max(rule.minInstances, wanted));
}

export interface ManagedInstance {
  readonly name: string;
  activity(): Promise<InstanceActivity | undefined>;
}

/** What the controller drives: the platform's view of one function's instances. */
export interface Fleet {
  /** Active messages (available + locked) of each function's subscription. */
  activeCounts(): Record<string, number>;
  /** Oldest first. */
  instances(): readonly ManagedInstance[];
  add(count: number): Promise<void>;
  remove(name: string): Promise<void>;
}

export interface Decision {
  /** ms since the controller started. */
  atMs: number;
  /** Active messages over the functions' subscriptions. */
  active: number;
  /** Of those, the drain function's (the one fan-out raises). */
  drainActive: number;
  before: number;
  desired: number;
  added: number;
  removed: string[];
}

interface Seen {
  idleSince: number | undefined;
  processed: number;
  last: InstanceActivity | undefined;
}

export class ScaleController {
  private readonly seen = new Map<string, Seen>();
  private readonly started: number;
  readonly decisions: Decision[] = [];

  constructor(
    private readonly fleet: Fleet,
    private readonly rule: PlatformRule,
    private readonly now: () => number = Date.now,
  ) {
    this.started = now();
  }

  /** The last activity each instance reported (its share so far). */
  lastActivity(name: string): InstanceActivity | undefined {
    return this.seen.get(name)?.last;
  }

  /** One decision: look at the subscription and the instances, then add or remove. */
  async tick(): Promise<Decision> {
    const now = this.now();
    const counts = this.fleet.activeCounts();
    const instances = [...this.fleet.instances()];
    await Promise.all(instances.map(async (i) => this.observe(i.name, await i.activity(), now)));
    const desired = desiredInstances(counts, this.rule);
    const active = Object.values(counts).reduce((a, n) => a + n, 0);
    const decision: Decision = {
      atMs: now - this.started,
      active,
      drainActive: counts.drain ?? 0,
      before: instances.length,
      desired,
      added: 0,
      removed: [],
    };
    if (desired > instances.length) {
      decision.added = Math.min(this.rule.maxStep, desired - instances.length);
      await this.fleet.add(decision.added);
    } else if (desired < instances.length) {
      // Never below the minimum, never a busy instance; the longest idle go first.
      const removable = instances
        .slice(this.rule.minInstances)
        .map((i) => ({ name: i.name, since: this.seen.get(i.name)?.idleSince }))
        .filter(
          (i): i is { name: string; since: number } => i.since !== undefined && now - i.since >= this.rule.coolDownMs,
        )
        .sort((a, b) => a.since - b.since)
        .slice(0, instances.length - desired);
      for (const i of removable) {
        await this.fleet.remove(i.name);
        this.seen.delete(i.name);
        decision.removed.push(i.name);
      }
    }
    if (decision.added > 0 || decision.removed.length > 0 || this.decisions.length === 0 || this.changed(decision))
      this.decisions.push(decision);
    return decision;
  }

  private changed(d: Decision): boolean {
    const last = this.decisions[this.decisions.length - 1];
    return !last || last.desired !== d.desired || last.before !== d.before;
  }

  private observe(name: string, a: InstanceActivity | undefined, now: number): void {
    const s = this.seen.get(name) ?? { idleSince: undefined, processed: -1, last: undefined };
    if (a) {
      const processed = a.processed.map + a.processed.reduce;
      const idle = a.inProgress === 0 && a.held === 0 && processed === s.processed;
      s.idleSince = idle ? (s.idleSince ?? now) : undefined;
      s.processed = processed;
      s.last = a;
    } else {
      s.idleSince = undefined; // not answering: starting or stopping, not idle
    }
    this.seen.set(name, s);
  }
}
