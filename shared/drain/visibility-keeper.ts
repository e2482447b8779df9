/**
 * Keeps a received batch invisible while it is in work, as the Functions queue trigger does: a
 * message still held once 40 % of its visibility timeout has passed gets the whole timeout
 * again (one Update Message request each), and again 40 % after that update was sent, for as
 * long as it is held. Renewing before half the timeout leaves the other half for a late timer
 * (a busy event loop) and a slow request. An update needs the receipt the last one returned, so
 * a slow answer delays the next round, which is then sent at once. A message whose update finds
 * it taken (another delivery received it after all) is marked, so it is not deleted and counts
 * as a duplicate.
 *
 * Receive sizing (ReceiveSizer) keeps batches short enough that this rarely fires: it is the
 * guard for a slow moment, not the way work is paced. Its cost is one storage transaction per
 * held message per 40 % of the timeout.
 *
 * An update that fails for any other reason (the SDK has already retried it) ends the extensions
 * of that batch, with one warning line: a store that cannot take the update would only be sent
 * more of them, and an Azurite that is restarting must not meet a queue of retried updates. The
 * batch's messages may then reappear; a delivery that takes one makes this one a duplicate.
 */
import { ensureError } from '../errors';
import type { DrainQueue, Logger, QueueMessage } from '../ports';
import { MessageTakenError } from '../queue/message-taken-error';
import type { DrainCounter } from './drain-counts';

/** The share of the visibility timeout after which a held message is extended. */
const EXTEND_AT = 0.4;

export interface HeldBatch {
  /** Ids of the messages another delivery took while we held them. */
  readonly taken: ReadonlySet<string>;
  /** Stops extending; resolves once an update in flight has settled (its new receipt stored). */
  release(): Promise<void>;
}

export class VisibilityKeeper {
  constructor(
    private readonly queue: DrainQueue,
    private readonly visibilityTimeoutSeconds: number,
    /** Counts each Update Message request made to keep messages in work. */
    private readonly counts: DrainCounter,
    private readonly log: Logger,
  ) {}

  /**
   * `sinceMs`: how long ago the receive was sent. The timeout started on the server when it
   * answered, so a slow answer has already used part of it: the first extension comes that much sooner.
   */
  hold(messages: readonly QueueMessage[], sinceMs = 0): HeldBatch {
    const taken = new Set<string>();
    const queue = this.queue;
    if (!queue.extend || messages.length === 0) return { taken, release: () => Promise.resolve() };
    let released = false;
    let inFlight: Promise<void> = Promise.resolve();
    let timer: NodeJS.Timeout | undefined;
    const everyMs = this.visibilityTimeoutSeconds * 1000 * EXTEND_AT;
    let failed: string | undefined;
    const extendAll = async (): Promise<void> => {
      await Promise.all(
        messages
          .filter((m) => !taken.has(m.id))
          .map(async (m) => {
            try {
              await queue.extend!(m, this.visibilityTimeoutSeconds);
              this.counts.add('extensions');
            } catch (e) {
              if (e instanceof MessageTakenError) taken.add(m.id);
              // A failed update leaves the old receipt and timeout.
              else failed ??= ensureError(e).message;
            }
          }),
      );
      if (failed !== undefined) {
        released = true;
        this.log.warn(`${queue.name}: visibility of ${messages.length} held messages no longer extended: ${failed}`);
      }
    };
    const arm = (inMs: number): void => {
      timer = setTimeout(() => {
        if (released) return;
        // The new timeout runs from when the store applies the update, never before it was sent:
        // the next round is due one period after this send, however long its answer takes.
        const sentAt = Date.now();
        inFlight = extendAll().finally(() => {
          if (!released) arm(Math.max(0, sentAt + everyMs - Date.now()));
        });
      }, inMs);
      // Never keeps a process alive: the batch it guards does.
      timer.unref();
    };
    arm(Math.max(0, everyMs - sinceMs));
    return {
      taken,
      release: async () => {
        released = true;
        clearTimeout(timer);
        await inFlight;
      },
    };
  }
}
