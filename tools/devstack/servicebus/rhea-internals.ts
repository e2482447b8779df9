/**
 * Every use of rhea's private API, in one place, each with the reason the public API is not enough.
 * Checked against rhea 3.0.5 (pinned in package.json).
 */
import type { Socket } from 'node:net';

import type { AmqpError, Connection, ConnectionOptions, Container, Delivery, link, Sender } from 'rhea';

interface SenderInternals {
  credit: number;
  delivery_count: number;
  _draining: boolean;
  _drained: boolean;
  _get_drain: () => boolean;
}

interface AttachFields {
  snd_settle_mode?: number;
  rcv_settle_mode?: number;
  max_message_size?: number;
  /** `null` refuses the link: see {@link refuseLink}. */
  source?: null;
  target?: null;
}

interface LinkInternals {
  local: { attach: AttachFields };
}

interface DeliveryInternals {
  remote_settled: boolean;
}

interface ConnectionInternals {
  accept(socket: Socket): void;
}

/**
 * The delivery-count limit the receiver granted (its delivery-count + link-credit at its last flow).
 * rhea's own `credit` ignores deliveries queued but not yet written, so the broker counts against this.
 */
export function creditLimit(sender: Sender): number {
  const s = sender as unknown as SenderInternals;
  return s.credit + s.delivery_count;
}

/**
 * rhea answers a drain only while credit remains. When in-flight deliveries used the last
 * credit, the SDK would wait for the echo and then close its link, so echo the drain regardless.
 */
export function alwaysEchoDrain(sender: Sender): void {
  const s = sender as unknown as SenderInternals;
  s._get_drain = function (this: SenderInternals): boolean {
    if (!this._draining || !this._drained) return false;
    this.delivery_count += this.credit;
    this.credit = 0;
    return true;
  };
}

/**
 * Sets fields of the attach the broker sends back (settle modes, max message size). rhea
 * creates peer-initiated links with connection-wide options, so per-link values go here.
 */
export function setLocalAttach(l: link, fields: AttachFields): void {
  Object.assign((l as unknown as LinkInternals).local.attach, fields);
}

/**
 * Refuses a client's attach as Service Bus does: the answering attach carries a null terminus on
 * the client's side, then the detach carries the error. The .NET client otherwise takes the
 * echoed terminus for a successful attach and fails its send on a missing max-message-size,
 * instead of reporting the detach's error.
 */
export function refuseLink(l: link, error: AmqpError): void {
  setLocalAttach(l, l.is_sender() ? { source: null } : { target: null });
  l.close(error);
}

/**
 * With rcv-settle-mode *second* the SDK settles silently after the broker settles, so rhea
 * would keep the delivery in its 2048-slot session buffer forever and the link would stall.
 * Call right after `delivery.update(true, …)`.
 */
export function forgetSettled(delivery: Delivery): void {
  (delivery as unknown as DeliveryInternals).remote_settled = true;
}

/**
 * A server-side connection on a socket the broker accepted (the broker owns the net.Server so it
 * can track and drop sockets). rhea's ConnectionOptions typings only describe client connections.
 * Link defaults: no auto-accept, so a send can be refused with ServerBusy; `modified` (abandon,
 * defer) reported as itself rather than as `released`.
 */
export function acceptServerConnection(container: Container, socket: Socket, id: string): Connection {
  const options = {
    id,
    sender_options: { autosettle: true, treat_modified_as_released: false },
    receiver_options: { autoaccept: false },
  };
  const connection = container.create_connection(options as unknown as ConnectionOptions);
  (connection as unknown as ConnectionInternals).accept(socket);
  return connection;
}
