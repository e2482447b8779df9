/**
 * Send availability over paired namespaces (the old SDK's SendAvailabilityPairedNamespaceOptions,
 * rebuilt client-side): sends go to the primary; per entity, once failures have lasted the
 * failover interval, they go to a random backlog queue of the secondary instead, and a ping
 * brings them back when the primary takes sends again. Receivers only ever read the primary;
 * the syphon moves the backlog back. Which failure counts is the one table's call (failoverClass).
 */
import type { BusPublisher, ScheduledMessages } from '../bus/bus-publisher';
import type { MessageChannel } from '../bus/message-channel';
import { SENT_ENTITIES } from '../bus/message-types';
import { describeMessages, type OutgoingMessage } from '../bus/outgoing-message';
import { PermanentError, TransientError } from '../errors';
import type { Clock, Logger } from '../ports';
import { failoverClass, failureSummary, SERVER_BUSY_WAIT_MS } from '../retry/transient';
import { toBacklogMessage } from './backlog-message';
import { BacklogRotation } from './backlog-rotation';
import { EntityFailover, type PublisherHealth } from './failover-state';

export interface PairedOptions {
  primary: MessageChannel;
  secondary: MessageChannel;
  backlogQueues: readonly string[];
  /** 0 fails over on the first failure that counts. */
  failoverIntervalMs: number;
  pingIntervalMs: number;
  clock: Clock;
  log: Logger;
}

/** ServerBusy: wait SERVER_BUSY_WAIT_MS, then one more try; the second refusal goes to the caller. */
const PRIMARY_ATTEMPTS = 2;

export class PairedPublisher implements BusPublisher {
  private readonly entities: ReadonlyMap<string, EntityFailover>;
  private readonly rotation: BacklogRotation;
  private pinging = false;
  private pingLoop: Promise<void> = Promise.resolve();
  private closed = false;
  private wakeOnClose: () => void = () => undefined;
  private readonly closedSignal = new Promise<void>((resolve) => (this.wakeOnClose = resolve));

  constructor(private readonly o: PairedOptions) {
    this.entities = new Map(SENT_ENTITIES.map((e) => [e, new EntityFailover(e, o.failoverIntervalMs)]));
    this.rotation = new BacklogRotation(o.backlogQueues, o.pingIntervalMs);
  }

  async send(entity: string, messages: readonly OutgoingMessage[]): Promise<void> {
    if (messages.length === 0) return;
    await this.sendVia(entity, messages, undefined, `sending ${describeMessages(messages)} to ${entity}`);
  }

  schedule(entity: string, messages: readonly OutgoingMessage[], delayMs: number): Promise<ScheduledMessages | void> {
    const at = new Date(this.o.clock.now() + delayMs);
    return this.sendVia(entity, messages, at, `scheduling ${describeMessages(messages)} on ${entity}`);
  }

  /** Only the primary's schedules hand back sequence numbers (see sendVia), so the cancel goes there. */
  async cancel(entity: string, sequenceNumbers: readonly string[]): Promise<void> {
    if (!this.o.primary.cancel) return;
    await this.o.primary.cancel(entity, sequenceNumbers);
  }

  health(): PublisherHealth {
    const entities = Object.fromEntries([...this.entities].map(([name, s]) => [name, s.health()]));
    const out = this.rotation.health(this.o.clock.now());
    const all = Object.values(entities);
    const red = all.some((e) => e.red) || out.some((q) => q.red);
    const degraded = all.some((e) => e.state !== 'healthy') || out.length > 0;
    return { status: red ? 'red' : degraded ? 'degraded' : 'ok', entities, backlogOutOfRotation: out };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.wakeOnClose();
    await this.pingLoop;
    await Promise.all([this.o.primary.close(), this.o.secondary.close()]);
  }

  /** What the primary scheduled can be cancelled; a backlog copy cannot (the syphon schedules it again). */
  private async sendVia(
    entity: string,
    messages: readonly OutgoingMessage[],
    at: Date | undefined,
    what: string,
  ): Promise<ScheduledMessages | void> {
    const state = this.entities.get(entity);
    if (!state) throw new PermanentError(`${entity} is not an entity this publisher sends to`);
    if (!state.failedOver) {
      const sent = await this.toPrimary(state, messages, at, what);
      if (sent !== 'failover') return sent.scheduled;
    }
    await this.toBacklog(entity, messages, at, what);
  }

  /** What the primary took, or 'failover' when this send should go to the secondary; throws what the caller must see. */
  private async toPrimary(
    state: EntityFailover,
    messages: readonly OutgoingMessage[],
    at: Date | undefined,
    what: string,
  ): Promise<{ scheduled: ScheduledMessages | void } | 'failover'> {
    const { clock, primary, log } = this.o;
    let error: unknown;
    for (let attempt = 1; attempt <= PRIMARY_ATTEMPTS; attempt++) {
      const wait = state.busyWait(clock.now());
      if (wait > 0) await clock.sleep(wait); // ServerBusy: no retry for this entity before the wait is over
      try {
        const scheduled = await primary.send(state.entity, messages, at);
        state.succeeded();
        return { scheduled };
      } catch (e) {
        error = e;
        const kind = failoverClass(e);
        if (state.failed(kind, clock.now(), failureSummary(e)) === 'failover') {
          log.warn(
            `${state.entity}: the primary has failed for the failover interval (${failureSummary(e)}); sends go to the secondary's backlog queues`,
          );
          this.startPinging();
          return 'failover';
        }
        if (state.unhealthy) this.startPinging();
        if (kind === 'permanent')
          log.error(
            `${state.entity}: ${failureSummary(e)}: this never fails over; health is red until a send succeeds`,
          );
        if (kind !== 'busy') break;
      }
    }
    const message = `${what} failed: ${failureSummary(error)}`;
    const kind = failoverClass(error);
    if (kind === 'permanent') throw new PermanentError(message, { cause: error });
    throw new TransientError(message, kind === 'busy' ? SERVER_BUSY_WAIT_MS : undefined, { cause: error });
  }

  private async toBacklog(
    entity: string,
    messages: readonly OutgoingMessage[],
    at: Date | undefined,
    what: string,
  ): Promise<void> {
    const { clock, secondary, log } = this.o;
    const copies = messages.map((m) => toBacklogMessage(entity, m, at, clock.now()));
    const failures: string[] = [];
    for (const queue of this.rotation.order(clock.now(), () => clock.random())) {
      try {
        await secondary.send(queue, copies);
        this.rotation.succeeded(queue);
        return;
      } catch (e) {
        this.rotation.failed(queue, failoverClass(e), clock.now(), failureSummary(e));
        failures.push(`${queue}: ${failureSummary(e)}`);
        log.warn(
          `backlog queue ${queue} failed and leaves the rotation for ${this.o.pingIntervalMs} ms: ${failureSummary(e)}`,
        );
      }
    }
    const why = failures.length > 0 ? failures.join('; ') : 'every backlog queue is out of the rotation';
    throw new TransientError(`${what} failed: ${entity} is failed over and no backlog queue took it (${why})`);
  }

  /** Runs only while an entity is suspect or failed over: a healthy publisher holds no timer. */
  private startPinging(): void {
    if (this.pinging || this.closed) return;
    this.pinging = true;
    this.pingLoop = this.pingWhileFailedOver().catch((e: unknown) => {
      this.pinging = false;
      this.o.log.error(`the ping loop stopped: ${failureSummary(e)}`);
    });
  }

  private async pingWhileFailedOver(): Promise<void> {
    const { clock, primary, log } = this.o;
    // Bounded by the outage itself: it ends when every entity is back, or on close.
    for (;;) {
      if (this.closed || ![...this.entities.values()].some((s) => s.unhealthy)) {
        this.pinging = false; // in the same tick as the check, so a new failover starts a new loop
        return;
      }
      await Promise.race([clock.sleep(this.o.pingIntervalMs), this.closedSignal]);
      if (this.closed) continue;
      // Every entity still unhealthy, suspect ones too: each ping proves only its own entity.
      for (const state of [...this.entities.values()].filter((s) => s.unhealthy)) {
        try {
          await primary.ping(state.entity);
          const wasFailedOver = state.failedOver;
          state.succeeded();
          log.info(`${state.entity}: the primary takes sends again${wasFailedOver ? '; new sends go to it' : ''}`);
        } catch (e) {
          state.pingFailed(failoverClass(e), failureSummary(e));
        }
      }
    }
  }
}
