/**
 * One attempt of one delivery, by its kind: the topic is a Service Bus send (`batch-events`, with
 * the publisher's send availability); webhooks and callbacks are signed POSTs (webhook-post.ts), a
 * webhook with the operator's secret (`v1`), a callback with the callback key (`v1a`, ed25519).
 * The operator's own webhooks are trusted as configured; a callback is a client's URL, so its origin
 * is checked against PUSHDRAIN_CALLBACK_ORIGINS at every attempt (an origin the operator removed
 * ends the delivery as gone, redriven or not), and the SSRF guard refuses a private address unless
 * the origin is an exact entry.
 */
import type { EventSettings } from '../config/event-settings';
import { ensureError } from '../errors';
import { checkedLiteral, type HostLookup, resolveChecked } from './address-guard';
import { isAllowedOrigin, isExplicitlyAllowed } from './callback-policy';
import { CallbackSigner } from './callback-signer';
import type { EndpointAgents } from './endpoint-agents';
import type { AttemptResult, Delivery, DeliveryKind, OutboxEvent } from './outbox';
import { postSigned } from './webhook-post';

export type AttemptFn = (d: Delivery, e: OutboxEvent) => Promise<AttemptResult>;

export interface DeliveryAttemptDeps {
  settings: EventSettings;
  now: () => number;
  /** Sends to the `batch-events` topic; undefined without Service Bus. */
  publish?: ((e: OutboxEvent) => Promise<void>) | undefined;
  /** How host names resolve. @defaultValue the system resolver */
  lookup?: HostLookup | undefined;
  /** Kept connections to the receivers. @defaultValue a new connection per attempt */
  agents?: EndpointAgents | undefined;
}

export function deliveryAttempt({ settings, now, publish, lookup, agents }: DeliveryAttemptDeps): AttemptFn {
  const callbackSigner = settings.callbackKeys.length > 0 ? new CallbackSigner(settings.callbackKeys) : undefined;
  return async (d, e) => {
    if (d.kind === 'topic') {
      if (!publish) return { error: 'ServiceBusConnection is not configured: the topic cannot be sent to' };
      try {
        await publish(e);
        return { sent: true };
      } catch (err) {
        return { error: ensureError(err).message.slice(0, 300) };
      }
    }
    if (d.kind === 'callback' && !isAllowedOrigin(settings.callbackOrigins, d.target))
      return { gone: true, error: `origin ${originOf(d.target)} is no longer in PUSHDRAIN_CALLBACK_ORIGINS` };
    // A client verifies with a public key: it cannot sign for the operator or for another client.
    const secret = d.kind === 'callback' ? callbackSigner : settings.secret;
    if (!secret) return { error: 'PUSHDRAIN_WEBHOOK_SECRET is not set: nothing can sign the event' };
    const allowPrivate = d.kind === 'webhook' || isExplicitlyAllowed(settings.callbackOrigins, d.target);
    return postSigned({
      url: d.target,
      eventId: e.id,
      body: e.body,
      secret,
      allowPrivate,
      now,
      ...(lookup ? { lookup } : {}),
      ...(agents ? { agents } : {}),
    });
  };
}

/**
 * Opens connections to a batch's receivers while its terminal write is under way
 * (EndpointAgents.warm), each to an address the SSRF guard accepted exactly as the attempt's will
 * be; a refused or unresolvable host gets none. Sends nothing; never throws.
 */
export function deliveryWarmer({
  settings,
  lookup,
  agents,
}: Pick<DeliveryAttemptDeps, 'settings' | 'lookup'> & { agents: EndpointAgents }): (
  targets: readonly { kind: DeliveryKind; target: string }[],
) => void {
  return (targets) => {
    for (const t of targets) {
      if (t.kind === 'topic') continue;
      if (t.kind === 'callback' && !isAllowedOrigin(settings.callbackOrigins, t.target)) continue;
      let url: URL;
      try {
        url = new URL(t.target);
      } catch {
        continue;
      }
      const allowPrivate = t.kind === 'webhook' || isExplicitlyAllowed(settings.callbackOrigins, t.target);
      try {
        const literal = checkedLiteral(url.hostname, allowPrivate);
        if (literal) {
          agents.warm(url, literal);
          continue;
        }
      } catch {
        continue; // refused: the attempt will say so
      }
      resolveChecked(url.hostname, allowPrivate, lookup).then(
        (address) => agents.warm(url, address),
        () => undefined,
      );
    }
  };
}

function originOf(target: string): string {
  try {
    return new URL(target).origin;
  } catch {
    return 'of an invalid URL';
  }
}
