/**
 * Routes every link a client attaches: `$cbs` and `$management` request/reply pairs, senders into
 * queues and topics, receivers from queues, subscriptions and dead-letter queues. Unknown
 * addresses are refused with `amqp:not-found`. Links are tracked per connection for cleanup and
 * for the detach fault.
 */
import type { Connection, Container, EventContext, link, Message, Receiver, Sender, Session } from 'rhea';

import { CBS_ADDRESS, cbsReply } from './cbs';
import { Consumer, type ConsumerDeps } from './consumer';
import { type EntityRegistry, isWithin, managedEntity } from './entities';
import type { FaultState } from './faults';
import { type ManagementDeps, managementReply } from './management';
import { attachProducer } from './producer';
import { refuseLink } from './rhea-internals';
import type { Stats } from './stats';

export interface RouterDeps extends ConsumerDeps, ManagementDeps {
  registry: EntityRegistry;
  faults: FaultState;
  stats: Stats;
}

interface Tracked {
  link: link;
  /** Entity path for entity links; undefined for `$cbs` / `$management`. */
  entityPath: string | undefined;
  onClose: () => void;
}

interface ConnectionLinks {
  tracked: Set<Tracked>;
  /** Reply senders by the client's `reply_to` (its receiver link's name and target address). */
  replyLinks: Map<string, Sender>;
}

const DETACH_FORCED = 'amqp:link:detach-forced';

export class LinkRouter {
  private readonly connections = new Map<Connection, ConnectionLinks>();

  constructor(private readonly deps: RouterDeps) {}

  install(container: Container): void {
    container.on('sender_open', (ctx: EventContext) => ctx.sender && this.onClientReceiver(ctx.sender, ctx.connection));
    container.on(
      'receiver_open',
      (ctx: EventContext) => ctx.receiver && this.onClientSender(ctx.receiver, ctx.connection),
    );
    container.on(
      'session_close',
      (ctx: EventContext) => ctx.session && this.forgetSession(ctx.connection, ctx.session),
    );
  }

  /** Detaches every entity link at or below `entityPath` with `amqp:link:detach-forced`. */
  detach(entityPath: string): number {
    let count = 0;
    for (const links of this.connections.values()) {
      for (const t of [...links.tracked]) {
        if (t.entityPath === undefined || !isWithin(t.entityPath, entityPath)) continue;
        this.untrack(links, t);
        t.link.close({
          condition: DETACH_FORCED,
          description: `Detached by the development broker's fault injection (${entityPath})`,
        });
        count++;
      }
    }
    return count;
  }

  /** The connection is gone: end its consumers (their locks stay until they expire, as in Service Bus). */
  forgetConnection(connection: Connection): void {
    const links = this.connections.get(connection);
    if (!links) return;
    this.connections.delete(connection);
    for (const t of links.tracked) t.onClose();
  }

  private forgetSession(connection: Connection, session: Session): void {
    const links = this.connections.get(connection);
    if (!links) return;
    for (const t of [...links.tracked]) if (t.link.session === session) this.untrack(links, t);
  }

  /** A client receiver: the broker sends on it. */
  private onClientReceiver(sender: Sender, connection: Connection): void {
    const address = sender.source?.address ?? '';
    echoTermini(sender);
    if (address === CBS_ADDRESS || managedEntity(address) !== undefined) {
      const replies = this.linksOf(connection).replyLinks;
      const keys = [sender.name, sender.target?.address].filter((k): k is string => typeof k === 'string');
      for (const k of keys) replies.set(k, sender);
      this.track(connection, sender, undefined, () =>
        keys.forEach((k) => replies.get(k) === sender && replies.delete(k)),
      );
      return;
    }
    const entity = this.deps.registry.receiveEntity(address);
    if (!entity) return refuse(sender, address);
    const injected = this.deps.faults.attach.errorFor(address);
    if (injected) return refuseLink(sender, injected);
    const consumer = new Consumer(sender, entity, this.deps);
    this.track(connection, sender, address, () => consumer.close());
  }

  /** A client sender: the broker receives on it. */
  private onClientSender(receiver: Receiver, connection: Connection): void {
    const address = receiver.target?.address ?? '';
    echoTermini(receiver);
    const managed = managedEntity(address);
    if (address === CBS_ADDRESS || managed !== undefined) {
      receiver.on('message', (ctx: EventContext) => {
        ctx.delivery?.accept();
        if (!ctx.message) return;
        if (managed === undefined) this.deps.stats.inc('cbs');
        const reply = managed === undefined ? cbsReply(ctx.message) : managementReply(managed, ctx.message, this.deps);
        this.reply(connection, ctx.message, reply);
      });
      this.track(connection, receiver, undefined, () => undefined);
      return;
    }
    const target = this.deps.registry.sendTarget(address);
    if (!target) return refuse(receiver, address);
    const injected = this.deps.faults.attach.errorFor(address);
    if (injected) return refuseLink(receiver, injected);
    attachProducer(receiver, target, this.deps);
    this.track(connection, receiver, address, () => undefined);
  }

  private reply(connection: Connection, request: Message, reply: Message): void {
    const replyTo = request.reply_to;
    const sender = replyTo === undefined ? undefined : this.connections.get(connection)?.replyLinks.get(replyTo);
    if (!sender) return this.deps.log(`dropping reply: no link for reply_to ${String(replyTo)}`);
    this.deps.later(() => {
      if (sender.is_open()) sender.send(reply);
    });
  }

  private track(connection: Connection, l: link, entityPath: string | undefined, onClose: () => void): void {
    this.deps.stats.inc('attach');
    const links = this.linksOf(connection);
    const t: Tracked = { link: l, entityPath, onClose };
    links.tracked.add(t);
    const closed = (): void => {
      this.deps.stats.inc('detach');
      this.untrack(links, t);
    };
    l.on(l.is_sender() ? 'sender_close' : 'receiver_close', closed);
  }

  private untrack(links: ConnectionLinks, t: Tracked): void {
    if (links.tracked.delete(t)) t.onClose();
  }

  private linksOf(connection: Connection): ConnectionLinks {
    let links = this.connections.get(connection);
    if (!links) {
      links = { tracked: new Set(), replyLinks: new Map() };
      this.connections.set(connection, links);
    }
    return links;
  }
}

/** Echo the client's source and target, so its attach is answered with the same addresses. */
function echoTermini(l: link): void {
  if (l.source?.address !== undefined) l.set_source({ address: l.source.address });
  if (l.target?.address !== undefined) l.set_target({ address: l.target.address });
}

function refuse(l: link, address: string): void {
  refuseLink(l, { condition: 'amqp:not-found', description: `The messaging entity '${address}' could not be found.` });
}
