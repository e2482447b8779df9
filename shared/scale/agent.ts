/**
 * The dynamic scaling agent of the source article, for Azure Functions. The platform already
 * adds drain instances from the subscription's active count (fan-out makes it see the
 * backlog); the agent keeps instances *ready* ahead of a deep backlog, so the platform's
 * +4-per-decision ramp and cold starts do not hold it back, and gives them back when idle.
 *
 * Load signal: the WorkDetected events of the `scale` subscription (and the agent's own
 * scheduled checks), plus at most one depth sample per evaluation interval across all agents,
 * taken only when a signal arrived. Decision: the rule table (depth → instances) within the
 * bounds; up after the short cooldown, down only once no sample wanted the floor for the long one.
 * One decision per interval: the record in Blob Storage is written with If-Match first, and only
 * the agent that wins acts. Idle cost: once the floor is back at its minimum, nothing is scheduled,
 * so with no event there is no call at all.
 */
import type { ScaleSettings } from '../config/scale-rules';
import { floorFor } from '../config/scale-rules';
import { AccessDeniedError, ensureError, TransientError } from '../errors';
import type { Clock, Logger } from '../ports';
import type { AgentState, ScaleStateStore } from './state';
import type { ScaleDecision, ScaleTarget } from './target';

export type ScaleSignal = { kind: 'work'; queue: string; payloadSize: number; batchId?: string } | { kind: 'check' };

export type ScaleCall = 'none' | 'logged' | 'written' | 'unchanged' | 'throttled' | 'forbidden' | 'failed';

export type ScaleOutcome =
  | { kind: 'off' | 'not-due' | 'disabled' | 'lost-race' }
  | { kind: 'evaluated'; depth: number; wanted: number; decision: ScaleDecision; call: ScaleCall };

export interface ScaleHealth {
  mode: ScaleSettings['mode'];
  status: 'ok' | 'red';
  floor?: number;
  ceiling?: number;
  message?: string;
}

export interface AgentDeps {
  settings: ScaleSettings;
  store: ScaleStateStore;
  /** Approximate messages over the input queues: one sample (one request per queue). */
  depth(): Promise<number>;
  /** Undefined without a configured site: decisions are then only logged. */
  target: ScaleTarget | undefined;
  /** Schedules a scale check `delayMs` from now (a scheduled message on the topic). */
  scheduleCheck(delayMs: number): Promise<void>;
  clock: Clock;
  log: Logger;
}

export class ScaleAgent {
  private readonly targetKey: string;
  /** The record as this process last read or wrote it: skips reads while nothing can be due. */
  private cached: AgentState | undefined;
  /**
   * The ETag of `cached` when the stored record is still the one this process last wrote or read:
   * a due evaluation claims the interval with it, without reading first (another agent's write
   * since makes the claim fail, and the record is read then).
   */
  private cachedEtag: string | undefined;

  constructor(private readonly deps: AgentDeps) {
    const { plan, site } = deps.settings;
    this.targetKey = `${plan}|${site ? `${site.subscriptionId}/${site.resourceGroup}/${site.siteName}` : 'no-site'}`;
  }

  health(): ScaleHealth {
    const s = this.cached;
    const base = { mode: this.deps.settings.mode, ...(s ? { floor: s.floor, ceiling: s.ceiling } : {}) };
    if (s?.disabled) return { ...base, status: 'red', message: `scaling agent disabled: ${s.disabled.reason}` };
    return { ...base, status: 'ok' };
  }

  async handle(signal: ScaleSignal): Promise<ScaleOutcome> {
    const { settings, store, clock } = this.deps;
    if (settings.mode === 'off') return { kind: 'off' };
    const now = clock.now();
    if (this.cached?.disabled) return { kind: 'disabled' };
    if (signal.kind === 'work' && this.cached && now < this.cached.nextEvalAt) return { kind: 'not-due' };
    if (signal.kind === 'work' && this.cached && this.cachedEtag !== undefined) {
      const before = this.cached;
      // Refused, or any failure: the reading path below decides afresh (as a manifest update does).
      const claimed = await this.claim(before, this.cachedEtag, now).catch(() => {
        this.cachedEtag = undefined;
        return undefined;
      });
      if (claimed !== undefined) return this.decide(before, claimed, signal, now);
    }
    const initial = { floor: settings.minInstances, ceiling: settings.maxInstances };
    const stored = await store.read(this.targetKey, initial);
    this.remember(stored.state, stored.etag);
    if (stored.state.disabled) return { kind: 'disabled' };
    if (now < stored.state.nextEvalAt) return { kind: 'not-due' };
    const claimed = await this.claim(stored.state, stored.etag, now);
    if (claimed === undefined) return { kind: 'lost-race' };
    return this.decide(stored.state, claimed, signal, now);
  }

  private remember(state: AgentState, etag: string | undefined): void {
    this.cached = state;
    this.cachedEtag = etag;
  }

  /**
   * Claims the interval before sampling: of two agents woken together, one samples and decides.
   * The claim's ETag, or undefined when another agent wrote the record since `etag`.
   */
  private async claim(before: AgentState, etag: string | undefined, now: number): Promise<string | undefined> {
    const claim = { ...before, nextEvalAt: now + this.deps.settings.intervalSeconds * 1000 };
    const claimed = await this.deps.store.write(claim, etag);
    if (claimed === undefined) this.cachedEtag = undefined;
    else this.remember(claim, claimed);
    return claimed;
  }

  private async decide(before: AgentState, claimed: string, signal: ScaleSignal, now: number): Promise<ScaleOutcome> {
    const { settings, store } = this.deps;
    const depth = await this.deps.depth();
    const wanted = floorFor(depth, settings.rules, settings.minInstances, settings.maxInstances);
    const s: AgentState = {
      ...before,
      ceiling: settings.maxInstances,
      nextEvalAt: now + settings.intervalSeconds * 1000,
    };
    s.lastSample = {
      at: now,
      depth,
      wanted,
      trigger: signal.kind === 'work' ? `${signal.queue} (+${signal.payloadSize} B)` : 'scheduled check',
    };
    if (wanted >= s.floor) s.highAt = now;
    if (wanted > s.floor && now - s.changedAt >= settings.upCooldownSeconds * 1000) {
      s.floor = wanted;
      s.changedAt = now;
    } else if (wanted < s.floor && now - s.highAt >= settings.downCooldownSeconds * 1000) {
      s.floor = wanted;
      s.changedAt = now;
    }
    const decision = { floor: s.floor, ceiling: s.ceiling };
    const throttled = s.retryAt !== undefined && now < s.retryAt;
    const needed = !throttled && !sameAs(s.applied, decision, settings.mode);
    // Above the minimum, a later check must come even if no event does: that is how the floor
    // returns to the minimum on an idle system. One is pending at a time.
    const wake =
      s.floor > settings.minInstances && !(s.wakeAt !== undefined && s.wakeAt > now)
        ? now + (settings.downCooldownSeconds + settings.intervalSeconds) * 1000
        : undefined;
    if (wake !== undefined) s.wakeAt = wake;
    // At the minimum, with nothing to change, call or schedule, the claim already says all that
    // matters to other agents (the next due time): the sample is not worth a second write.
    if (!needed && wake === undefined && s.floor === before.floor && s.floor === settings.minInstances) {
      this.remember(s, claimed);
      return { kind: 'evaluated', depth, wanted, decision, call: 'none' };
    }
    const written = await store.write(s, claimed);
    if (written === undefined) {
      this.cachedEtag = undefined;
      return { kind: 'lost-race' };
    }
    this.remember(s, written);
    if (wake !== undefined) await this.schedule(wake - now);
    const call = needed ? await this.apply(s, written, decision, now) : 'none';
    if (before.floor !== s.floor)
      this.deps.log.info(
        `scale agent: depth ${depth} → floor ${before.floor} → ${s.floor} (ceiling ${s.ceiling}); ${call}`,
      );
    return { kind: 'evaluated', depth, wanted, decision, call };
  }

  /** Sends (or, in dry-run, logs) the decision and records the result with the ETag of our own write. */
  private async apply(s: AgentState, etag: string, decision: ScaleDecision, now: number): Promise<ScaleCall> {
    const { settings, target, log, store } = this.deps;
    let call: ScaleCall;
    let next: AgentState;
    if (settings.mode === 'dry-run' || !target) {
      const request = target?.describe(decision);
      log.info(
        `scale agent (${settings.mode}, nothing sent): floor ${decision.floor}, ceiling ${decision.ceiling}${request ? `; would send ${request.method} ${request.url} ${JSON.stringify(request.body)}${request.note ? ` (${request.note})` : ''}` : '; no site configured'}`,
      );
      call = 'logged';
      next = { ...s, applied: { ...decision, by: 'dry-run', at: now } };
    } else {
      try {
        call = await target.apply(decision);
        next = { ...s, applied: { ...decision, by: 'apply', at: now } };
        delete next.retryAt;
      } catch (e) {
        const err = ensureError(e);
        if (err instanceof AccessDeniedError) {
          log.error(
            `scale agent disabled: ${err.message}. It makes no more management calls until leases/_scale/agent.json is deleted or the target changes.`,
          );
          next = { ...s, disabled: { at: now, reason: err.message } };
          call = 'forbidden';
        } else if (err instanceof TransientError && err.retryAfterMs !== undefined) {
          const retryAt = now + err.retryAfterMs;
          log.warn(
            `scale agent: ${err.message}; next attempt after ${Math.ceil(err.retryAfterMs / 1000)} s (Retry-After)`,
          );
          // The check comes a second after Retry-After, so it finds the evaluation due.
          next = { ...s, retryAt, wakeAt: retryAt + 1000, nextEvalAt: Math.max(s.nextEvalAt, retryAt) };
          call = 'throttled';
          await this.schedule(err.retryAfterMs + 1000);
        } else {
          log.warn(`scale agent: applying floor ${decision.floor} failed, the next evaluation retries: ${err.message}`);
          return 'failed';
        }
      }
    }
    // If another agent wrote meanwhile, its record stands; ours is re-derived at the next evaluation.
    const written = await store.write(next, etag);
    if (written !== undefined) this.remember(next, written);
    else this.cachedEtag = undefined;
    return call;
  }

  private async schedule(delayMs: number): Promise<void> {
    try {
      await this.deps.scheduleCheck(delayMs);
    } catch (e) {
      // The record still says a check is pending until its time; after that, an evaluation schedules anew.
      this.deps.log.warn(`scale agent: scheduling a check failed: ${ensureError(e).message}`);
    }
  }
}

function sameAs(applied: AgentState['applied'], d: ScaleDecision, mode: ScaleSettings['mode']): boolean {
  return (
    applied !== undefined &&
    applied.by === (mode === 'apply' ? 'apply' : 'dry-run') &&
    applied.floor === d.floor &&
    applied.ceiling === d.ceiling
  );
}
