/**
 * GET /api/health: this process's view, from memory (no Storage request). It owns what only the
 * process knows (ingests in progress, parts the host reports down) and reads the rest from the
 * parts that keep it.
 */
import type { ContinuationCounts, Continuations } from '../drain/continuations';
import type { DrainActivity, DrainCoordinator } from '../drain/coordinator';
import { AbortedError } from '../errors';
import type { PublisherHealth } from '../notify/failover-state';
import type { Notifier } from '../notify/notifier';
import type { ScaleAgent, ScaleHealth } from '../scale/agent';
import type { MissingEntities } from '../storage/missing-entities';
import type { MemoryBudget, MemoryBudgetSnapshot } from '../util/memory-budget';
import type { DeadLetterHealth, DeadLetterTally } from './dead-letter-tally';

export interface HealthState {
  /** The worst of the parts (see ProcessHealth.of); the app still takes and processes work. */
  status: 'ok' | 'degraded' | 'red';
  drains: DrainActivity;
  /** Continuations this process scheduled, coalesced and cancelled (see drain/continuations.ts). */
  continuations: ContinuationCounts;
  scaleAgent: ScaleHealth;
  /** Failover state per entity; only with a secondary namespace. */
  serviceBus?: PublisherHealth;
  /** Service Bus dead letters as last counted (see status/dead-letter-tally.ts); only with Service Bus. */
  deadLetters?: DeadLetterHealth;
  /** POST /api/batches in progress here, and how many were stopped because the client went away. */
  ingests: { inProgress: number; aborted: number };
  /** The batch data this process holds at once, against its budget (util/memory-budget.ts). */
  memory: MemoryBudgetSnapshot;
  /** Parts the host runs for the app that are down and being restarted (npm start's embedded Azurite). */
  down?: string[];
  /** Queues and containers Storage said do not exist (`queue work-0`): infra/ provisions them; degraded. */
  notProvisioned?: string[];
}

/** The parts health reads; each answers from memory. */
interface HealthSources {
  drains: Pick<DrainCoordinator, 'activity'>;
  continuations: Pick<Continuations, 'snapshot'>;
  scaleAgent: Pick<ScaleAgent, 'health'>;
  notifier: Pick<Notifier, 'health'>;
  deadLetterTally: Pick<DeadLetterTally, 'snapshot'> | undefined;
  missing: Pick<MissingEntities, 'snapshot'>;
  memory: Pick<MemoryBudget, 'snapshot'>;
}

const RANK = { ok: 0, degraded: 1, red: 2 } as const;

export class ProcessHealth {
  private readonly ingests = { inProgress: 0, aborted: 0 };
  private readonly down = new Set<string>();

  /** Runs one ingest, counted in progress meanwhile, and as aborted if the client went away. */
  async ingest<T>(work: () => Promise<T>): Promise<T> {
    this.ingests.inProgress++;
    try {
      return await work();
    } catch (e) {
      if (e instanceof AbortedError) this.ingests.aborted++;
      throw e;
    } finally {
      this.ingests.inProgress--;
    }
  }

  /** A part the host runs for the app is down (true) or back (false). */
  partDown(part: string, down: boolean): void {
    if (down) this.down.add(part);
    else this.down.delete(part);
  }

  /**
   * The worst part decides: a red publisher (a permanent Service Bus failure) or a part down is
   * red; a failed-over entity, a scaling agent disabled by a 403, a dead letter at the last count,
   * or a queue or container Storage said does not exist is degraded.
   */
  of(p: HealthSources): HealthState {
    const scaleAgent = p.scaleAgent.health();
    const serviceBus = p.notifier.health();
    const deadLetters = p.deadLetterTally?.snapshot();
    const notProvisioned = p.missing.snapshot();
    const parts: HealthState['status'][] = [
      serviceBus?.status ?? 'ok',
      scaleAgent.status === 'red' ? 'degraded' : 'ok',
      (deadLetters?.total ?? 0) > 0 ? 'degraded' : 'ok',
      notProvisioned.length > 0 ? 'degraded' : 'ok',
      this.down.size > 0 ? 'red' : 'ok',
    ];
    return {
      status: parts.reduce((worst, x) => (RANK[x] > RANK[worst] ? x : worst), 'ok'),
      drains: p.drains.activity(),
      continuations: p.continuations.snapshot(),
      scaleAgent,
      ...(serviceBus ? { serviceBus } : {}),
      ...(deadLetters ? { deadLetters } : {}),
      ingests: { ...this.ingests },
      memory: p.memory.snapshot(),
      ...(this.down.size > 0 ? { down: [...this.down] } : {}),
      ...(notProvisioned.length > 0 ? { notProvisioned } : {}),
    };
  }
}
