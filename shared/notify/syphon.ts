/**
 * The syphon: moves a backlog message of the secondary namespace back to its destination on
 * the primary, as the push-triggered function on each backlog queue hands it over. Settling is
 * the host's: returning completes the backlog message, throwing abandons it.
 *  - Restored: the primary accepted it (scheduled, when its enqueue time is still ahead).
 *  - Primary down: back off (one ping interval, doubling per delivery, capped), then throw, so
 *    the host abandons and delivery retries it; the backlog queue's maxDeliveryCount bounds it.
 *  - Malformed: it can never be restored. The Functions Node.js model gives a handler no
 *    dead-letter call, so it is set aside (the caller records it with the reason) and completed.
 */
import type { MessageChannel } from '../bus/message-channel';
import { TransientError } from '../errors';
import type { Clock, Logger } from '../ports';
import { doublingDelay } from '../retry/backoff';
import { failureSummary } from '../retry/transient';
import { type BacklogDelivery, fromBacklog } from './backlog-message';

export type SyphonOutcome =
  { kind: 'restored'; destination: string; scheduledFor?: string } | { kind: 'rejected'; reason: string };

/** What is kept of a malformed backlog message. */
export interface RejectedBacklogMessage {
  reason: string;
  messageId?: string;
  applicationProperties: Readonly<Record<string, unknown>>;
  body: unknown;
  at: string;
}

/** Longest wait before an abandon: well inside functionTimeout and the host's lock renewal (10 min). */
export const SYPHON_MAX_BACKOFF_MS = 300_000;

export interface SyphonDeps {
  primary: MessageChannel;
  clock: Clock;
  log: Logger;
  pingIntervalMs: number;
  /** Keeps a malformed message with its reason (nothing is dropped silently). */
  setAside(rejected: RejectedBacklogMessage): Promise<void>;
}

export class Syphon {
  constructor(private readonly deps: SyphonDeps) {}

  async restore(d: BacklogDelivery): Promise<SyphonOutcome> {
    const { clock, primary, log } = this.deps;
    const found = fromBacklog(d);
    if (typeof found === 'string') {
      await this.deps.setAside({
        reason: found,
        ...(d.messageId !== undefined ? { messageId: d.messageId } : {}),
        applicationProperties: d.applicationProperties ?? {},
        body: bodyForRecord(d.body),
        at: new Date(clock.now()).toISOString(),
      });
      return { kind: 'rejected', reason: found };
    }
    const at = found.scheduledAt && found.scheduledAt.getTime() > clock.now() ? found.scheduledAt : undefined;
    try {
      await primary.send(found.destination, [found.message], at);
    } catch (e) {
      const waitMs = this.backoffMs(d.deliveryCount);
      log.warn(
        `syphon: ${found.destination} on the primary did not take a backlog message (${failureSummary(e)}); abandoning it in ${waitMs} ms`,
      );
      await clock.sleep(waitMs);
      throw new TransientError(
        `restoring a backlog message to ${found.destination} failed: ${failureSummary(e)}`,
        undefined,
        { cause: e },
      );
    }
    return { kind: 'restored', destination: found.destination, ...(at ? { scheduledFor: at.toISOString() } : {}) };
  }

  /** Retries the primary no faster than the publisher pings it, and slower with each delivery. */
  backoffMs(deliveryCount: number): number {
    return doublingDelay(
      deliveryCount,
      { firstMs: this.deps.pingIntervalMs, maxDoublings: 5, maxMs: SYPHON_MAX_BACKOFF_MS },
      () => this.deps.clock.random(),
    );
  }

  close(): Promise<void> {
    return this.deps.primary.close();
  }
}

/** Bytes become base64 text, so the record is JSON whatever the host handed over. */
function bodyForRecord(body: unknown): unknown {
  return body instanceof Uint8Array ? { base64: Buffer.from(body).toString('base64') } : body;
}
