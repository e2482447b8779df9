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

export interface FanOutDeps {
  publish(queue: string, count: number): Promise<void>;
  depth(queue: string): Promise<number>;
  clock: Clock;
  log: Logger;
  tuning: Tuning;
}

/** The process's fan-out: what every drain's share uses (the rule, the publisher) and what it published. */
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

  /** One drain invocation's part in `queue`'s fan-out, with state of its own. */
  forDrain(queue: string, stage: Stage): DrainFanOut {
    return new DrainFanOut(queue, stage, this.deps, this.wanted, (n) => (this.publishedCount += n));
  }
}

/** One drain invocation's part in its queue's fan-out: only its own methods change its state. */
export class DrainFanOut {
  /** Holds the queue's slot 0, so asks for its fan-out. */
  private leads = false;
  /** Fan-out events this invocation has asked for (at most drainSlots − 1 in all). */
  private requested = 0;
  /** No depth read for a top-up before this (epoch ms). */
  private nextTopUpAt = 0;

  constructor(
    private readonly queue: string,
    private readonly stage: Stage,
    private readonly deps: FanOutDeps,
    private readonly wanted: TaskCountRule,
    private readonly onPublished: (count: number) => void,
  ) {}

  /**
   * The drain took a slot: the holder of a map queue's slot 0 leads from its first round on, and
   * only it reads the depth here (a failed read fails its round, as a failed receive would).
   */
  async acquired(slot: HeldSlot, round: number): Promise<void> {
    if (this.stage !== 'map' || slot.index !== 0 || round > 0) return;
    this.leads = true;
    await this.askFor(await this.deps.depth(this.queue));
  }

  /** A plain event joined this drain: if it leads, the depth may want more now. */
  async joined(): Promise<void> {
    const now = this.deps.clock.now();
    if (!this.leads || now < this.nextTopUpAt || this.requested >= this.deps.tuning.drainSlots - 1) return;
    this.nextTopUpAt = now + TOP_UP_EVERY_MS;
    await this.askFor(await this.deps.depth(this.queue).catch(() => 0));
  }

  /** Publishes what the depth wants beyond the leader and what it asked for; a failure only costs scale-out. */
  private async askFor(depth: number): Promise<void> {
    const extra = this.wanted(depth) - 1 - this.requested;
    if (extra <= 0) return;
    this.requested += extra;
    try {
      await this.deps.publish(this.queue, extra);
      this.onPublished(extra);
      this.deps.log.info(
        `${this.queue}: depth ${depth}, fan-out of ${extra} more drain(s) (${this.requested} asked for)`,
      );
    } catch (e) {
      this.requested -= extra;
      this.deps.log.warn(`${this.queue}: fan-out events could not be published: ${ensureError(e).message}`);
    }
  }
}
