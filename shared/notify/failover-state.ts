/**
 * The failover state of one primary entity (`work-detected`, `batch-watchdog`): failures of
 * different entities are independent (they often live on different Service Bus nodes), so
 * each fails over and returns on its own. Pure: time comes in as arguments.
 *
 *   healthy ──outage──▶ suspect ──interval passes with no success──▶ failedOver
 *      ▲                  │ send or ping succeeds                       │ ping succeeds
 *      └──────────────────┴─────────────────────────────────────────────┘
 *
 * The ping covers suspect too: an entity that failed and was not sent to again must not stay
 * suspect (health degraded) after the outage ends.
 *
 * ServerBusy never moves the state (it only imposes a wait); a permanent failure never
 * does either, it turns health red until the next success.
 */
import { type FailoverClass, SERVER_BUSY_WAIT_MS } from '../retry/transient';
import type { BacklogQueueHealth } from './backlog-rotation';

export type EntityState = 'healthy' | 'suspect' | 'failedOver';

export interface EntityHealth {
  state: EntityState;
  /** When the state began (suspect: the first failure; failedOver: the switch). */
  since?: string;
  /** A permanent failure (unauthorized, not found, disabled, too large) since the last success. */
  red: boolean;
  /** The latest failure's code and message (SDK text, no secrets). */
  lastError?: string;
}

/** What /api/health shows of the publisher when a secondary namespace is configured. */
export interface PublisherHealth {
  /** red: a permanent failure (fix the configuration); degraded: an entity is not healthy or a backlog queue is out. */
  status: 'ok' | 'degraded' | 'red';
  entities: Record<string, EntityHealth>;
  backlogOutOfRotation: BacklogQueueHealth[];
}

/** After a failed send: fail over (send this one to the secondary), or report it to the caller. */
export type Verdict = 'failover' | 'fail';

export class EntityFailover {
  private state: EntityState = 'healthy';
  private since = 0;
  private red = false;
  private lastError: string | undefined;
  private busyUntil = 0;

  constructor(
    readonly entity: string,
    private readonly intervalMs: number,
  ) {}

  /** Sends go to the secondary only once failed over; healthy and suspect still try the primary. */
  get failedOver(): boolean {
    return this.state === 'failedOver';
  }

  /** Suspect or failed over: the ping watches it until a ping or a send reaches the primary. */
  get unhealthy(): boolean {
    return this.state !== 'healthy';
  }

  /** How long to hold off the primary after ServerBusy (0: go ahead). */
  busyWait(now: number): number {
    return Math.max(0, this.busyUntil - now);
  }

  /** A send or a ping reached the primary: it is healthy, whatever it was. */
  succeeded(): void {
    this.state = 'healthy';
    this.red = false;
    this.lastError = undefined;
  }

  failed(kind: FailoverClass, now: number, summary: string): Verdict {
    this.lastError = summary;
    if (kind === 'busy') {
      this.busyUntil = now + SERVER_BUSY_WAIT_MS;
      return 'fail';
    }
    if (kind === 'permanent') {
      this.red = true;
      return 'fail';
    }
    if (this.state === 'failedOver') return 'failover'; // a send that was in flight when it switched
    if (this.state === 'healthy') this.enter('suspect', now);
    if (now - this.since < this.intervalMs) return 'fail';
    this.enter('failedOver', now);
    return 'failover';
  }

  /** A ping did not get through: stay (suspect or failed over), and remember why. */
  pingFailed(kind: FailoverClass, summary: string): void {
    this.lastError = summary;
    if (kind === 'permanent') this.red = true;
  }

  health(): EntityHealth {
    return {
      state: this.state,
      ...(this.state !== 'healthy' ? { since: new Date(this.since).toISOString() } : {}),
      red: this.red,
      ...(this.lastError !== undefined ? { lastError: this.lastError } : {}),
    };
  }

  private enter(state: EntityState, now: number): void {
    this.state = state;
    this.since = now;
  }
}
