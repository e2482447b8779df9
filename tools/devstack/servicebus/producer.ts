/**
 * One sender link (a broker-side rhea Receiver) into a queue or topic: single and batch
 * transfers, broker-assigned message ids, and the ServerBusy and drop faults.
 */
import { type AmqpError, type EventContext, type Message, message as amqp, type Receiver } from 'rhea';

import { BATCH_FORMAT, unpackBatch, withMessageId } from './amqp-message';
import type { FaultState } from './faults';
import { forgetSettled, setLocalAttach } from './rhea-internals';
import type { SendTarget } from './send-target';
import type { Stats } from './stats';

/** Service Bus Standard tier; the SDK sizes batches from it. */
const MAX_MESSAGE_SIZE = 262_144;

const SERVER_BUSY: AmqpError = {
  condition: 'com.microsoft:server-busy',
  description: 'The server is busy. Please retry the operation. (injected by the development broker)',
};

export interface ProducerDeps {
  stats: Stats;
  faults: FaultState;
  later: (fn: () => void) => void;
  log: (line: string) => void;
}

interface Composite {
  described(): unknown;
}
const outcomes = amqp as unknown as { accepted(): Composite; rejected(fields: { error: AmqpError }): Composite };

export function attachProducer(link: Receiver, target: SendTarget, deps: ProducerDeps): void {
  setLocalAttach(link, { max_message_size: MAX_MESSAGE_SIZE });
  link.on('message', (ctx: EventContext) => {
    const delivery = ctx.delivery;
    if (!delivery) return;
    deps.stats.inc('send');
    let outcome: Composite;
    if (deps.faults.takeServerBusy()) {
      deps.stats.inc('serverBusy');
      outcome = outcomes.rejected({ error: SERVER_BUSY });
    } else {
      try {
        const dropped = deps.faults.drops(target.path);
        for (const m of incomingMessages(ctx, delivery.format)) {
          if (dropped) target.discard();
          else target.accept(withMessageId(m));
        }
        outcome = outcomes.accepted();
      } catch (err) {
        deps.log(`send to ${target.path} failed: ${String(err)}`);
        outcome = outcomes.rejected({ error: { condition: 'amqp:decode-error', description: String(err) } });
      }
    }
    deps.later(() => {
      delivery.update(true, outcome.described());
      forgetSettled(delivery);
    });
  });
}

/** rhea decodes format-0 transfers; other formats arrive as raw bytes. */
function incomingMessages(ctx: EventContext, format: number): Message[] {
  const raw: unknown = ctx.message;
  if (format === BATCH_FORMAT && Buffer.isBuffer(raw)) return unpackBatch(raw);
  if (format !== 0 || !ctx.message) throw new Error(`unsupported message format ${format}`);
  return [ctx.message];
}
