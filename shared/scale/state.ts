/**
 * The scaling agent's record, one blob guarded by its ETag: every agent reads it, and only the
 * one whose conditional write succeeds acts on a decision. Two agents woken by the same burst
 * therefore make one decision and at most one management call.
 */
import { layout } from '../layout';
import type { BlobStore } from '../ports';
import type { ScaleDecision } from './target';

export interface AgentState {
  v: 1;
  /** Plan and site this record is about: a different target starts afresh. */
  target: string;
  floor: number;
  ceiling: number;
  /** What the site was last set to (apply) or what was last logged (dry-run), and by which mode. */
  applied?: ScaleDecision & { by: 'dry-run' | 'apply'; at: number };
  /** Epoch ms of the last floor change. */
  changedAt: number;
  /** Epoch ms of the last sample that wanted at least the current floor (scale-down waits for its cooldown). */
  highAt: number;
  /** No agent samples before this (one sample per evaluation interval, across all agents). */
  nextEvalAt: number;
  lastSample?: { at: number; depth: number; wanted: number; trigger: string };
  /** After a 429: no management call before this. */
  retryAt?: number;
  /** A scale check is scheduled for this time. */
  wakeAt?: number;
  /** Set by a 403: the agent makes no more calls until this record is removed or the target changes. */
  disabled?: { at: number; reason: string };
}

function freshState(target: string, decision: ScaleDecision): AgentState {
  return { v: 1, target, floor: decision.floor, ceiling: decision.ceiling, changedAt: 0, highAt: 0, nextEvalAt: 0 };
}

export interface StoredState {
  state: AgentState;
  /** undefined: no record yet (the first write must create it). */
  etag: string | undefined;
}

export class ScaleStateStore {
  private readonly ref = layout.scaleState();

  constructor(private readonly blobs: BlobStore) {}

  /** The record for this target, or a fresh one (also for an unreadable or foreign record). */
  async read(target: string, initial: ScaleDecision): Promise<StoredState> {
    const found = await this.blobs.read(this.ref);
    if (!found) return { state: freshState(target, initial), etag: undefined };
    let parsed: unknown;
    try {
      parsed = JSON.parse(found.body.toString('utf8'));
    } catch {
      parsed = undefined;
    }
    const s = parsed as Partial<AgentState> | undefined;
    if (s?.v !== 1 || s.target !== target) return { state: freshState(target, initial), etag: found.etag };
    return { state: s as AgentState, etag: found.etag };
  }

  /** Writes if nobody else has since `etag`; the new ETag, or undefined when another agent won. */
  write(state: AgentState, etag: string | undefined): Promise<string | undefined> {
    return this.blobs.write(this.ref, Buffer.from(JSON.stringify(state)), {
      contentType: 'application/json',
      condition: etag === undefined ? { ifNoneMatch: '*' } : { ifMatch: etag },
    });
  }
}
