/**
 * Sends a terminal batch's event to the `batch-events` topic: one send per event and process (a
 * second caller shares it), remembered so that the open marker can go once the topic has it.
 * The topic copy is not a delivery: nothing is recorded per attempt; a send that fails is sent
 * again by recovery (the event's stored id and bytes: a duplicate at worst).
 */
import type { Manifest } from '../batch/manifest';
import { ensureError } from '../errors';
import type { Logger } from '../ports';
import { type OutboxEvent, topicUnsent } from './outbox';

/** Topic sends remembered per process (a bound: only the last moments' batches matter). */
const REMEMBERED_SENDS = 1_000;

export interface BatchEventTopic {
  name: string;
  publish: (e: OutboxEvent) => Promise<void>;
}

export class TopicSender {
  /** Sends started in this process, by event id: true once the topic has the event. */
  private readonly sends = new Map<string, Promise<boolean>>();

  constructor(
    /** Undefined without Service Bus: every send fails, and recovery keeps the marker. */
    private readonly topic: BatchEventTopic | undefined,
    private readonly log: Logger,
  ) {}

  /** One send per event and process (a second caller shares it); never rejects. */
  send(batchId: string, e: OutboxEvent): Promise<boolean> {
    const known = this.sends.get(e.id);
    if (known) return known;
    const topic = this.topic;
    // setImmediate: the webhook requests started in this turn are written first.
    const p = new Promise<void>((r) => setImmediate(r))
      .then(() => (topic ? topic.publish(e) : Promise.reject(new Error('ServiceBusConnection is not configured'))))
      .then(
        () => true,
        (err: unknown) => {
          this.sends.delete(e.id);
          this.log.warn(
            `${e.type} ${e.id} of batch ${batchId}: not sent to ${e.topic ?? 'its topic'}, recovery sends it again: ${ensureError(err).message}`,
          );
          return false;
        },
      );
    this.sends.set(e.id, p);
    for (const oldest of this.sends.keys()) {
      if (this.sends.size <= REMEMBERED_SENDS) break;
      this.sends.delete(oldest);
    }
    return p;
  }

  /** True when every topic copy `m` may owe was sent by this process (the marker may go). */
  async allSent(m: Manifest): Promise<boolean> {
    for (const e of topicUnsent(m)) if (!(await this.sends.get(e.id))) return false;
    return true;
  }

  /** Those of `m`'s events whose topic copy this process has sent (known without waiting). */
  async sentHere(m: Manifest): Promise<Set<string>> {
    const out = new Set<string>();
    for (const e of topicUnsent(m)) {
      const p = this.sends.get(e.id);
      // A settled send resolves within a microtask; a send still in flight is not waited for.
      if (p && (await Promise.race([p, Promise.resolve(false)]))) out.add(e.id);
    }
    return out;
  }
}
