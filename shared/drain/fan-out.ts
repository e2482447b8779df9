/**
 * Fan-out: the drain holding a deep input queue's slot 0 asks for more drains of that queue,
 * as fan-out events, from the seed's rule applied across instances (docs/DESIGN.md, "Scale-out").
 */
import type { Tuning } from '../config/settings';
import { ensureError } from '../errors';
import type { Stage } from '../names';
import type { Clock, HeldSlot, Logger } from '../ports';
import { perMessagesRule, type TaskCountRule } from './task-count';

/** Drains a queue of this depth wants across all instances: one per messagesPerDrain, 1…drainSlots. */
export function fanOutRule(tuning: Tuning): TaskCountRule {
  return perMessagesRule(tuning.messagesPerDrain, tuning.drainSlots);
}

/**
 * A plain event joining the leader may mean the backlog grew: look at the depth again, but at
 * most this often, so a steady stream of small batches costs one extra read per queue per 5 s.
 */
const TOP_UP_EVERY_MS = 5_000;

/** One drain invocation's part in its queue's fan-out. */
export interface FanOutState {
  /** Holds the queue's slot 0, so asks for its fan-out. */
  leads: boolean;
  /** Fan-out events this invocation has asked for (at most drainSlots − 1 in all). */
  requested: number;
  /** No depth read for a top-up before this (epoch ms). */
  nextTopUpAt: number;
}

export interface FanOutDeps {
  publish(queue: string, count: number): Promise<void>;
  depth(queue: string): Promise<number>;
  clock: Clock;
  log: Logger;
  tuning: Tuning;
}

export class FanOut {
  private readonly wanted: TaskCountRule;
  private publishedCount = 0;

  constructor(private readonly deps: FanOutDeps) {
    this.wanted = fanOutRule(deps.tuning);
  }

  /** Fan-out events this process published. */
  get published(): number {
    return this.publishedCount;
  }

  static state(): FanOutState {
    return { leads: false, requested: 0, nextTopUpAt: 0 };
  }

  /**
   * A drain took a slot: the holder of a map queue's slot 0 leads from its first round on, and
   * only it reads the depth here (a failed read fails its round, as a failed receive would).
   */
  async acquired(queue: string, stage: Stage, state: FanOutState, slot: HeldSlot, round: number): Promise<void> {
    if (stage !== 'map' || slot.index !== 0 || round > 0) return;
    state.leads = true;
    await this.askFor(queue, state, await this.deps.depth(queue));
  }

  /** A plain event joined this drain: if it leads, the depth may want more now. */
  async joined(queue: string, state: FanOutState): Promise<void> {
    const now = this.deps.clock.now();
    if (!state.leads || now < state.nextTopUpAt || state.requested >= this.deps.tuning.drainSlots - 1) return;
    state.nextTopUpAt = now + TOP_UP_EVERY_MS;
    await this.askFor(queue, state, await this.deps.depth(queue).catch(() => 0));
  }

  /** Publishes what the depth wants beyond the leader and what it asked for; a failure only costs scale-out. */
  private async askFor(queue: string, state: FanOutState, depth: number): Promise<void> {
    const extra = this.wanted(depth) - 1 - state.requested;
    if (extra <= 0) return;
    state.requested += extra;
    try {
      await this.deps.publish(queue, extra);
      this.publishedCount += extra;
      this.deps.log.info(`${queue}: depth ${depth}, fan-out of ${extra} more drain(s) (${state.requested} asked for)`);
    } catch (e) {
      state.requested -= extra;
      this.deps.log.warn(`${queue}: fan-out events could not be published: ${ensureError(e).message}`);
    }
  }
}
