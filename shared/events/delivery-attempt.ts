/**
 * One attempt of one delivery, by its kind: webhooks and callbacks are signed POSTs (webhook-post.ts).
 * The operator's own webhooks are trusted as configured; a callback is a client's URL, so the SSRF
 * guard refuses a private address unless its origin is in PUSHDRAIN_CALLBACK_ORIGINS.
 */
import type { EventSettings } from '../config/event-settings';
import type { HostLookup } from './address-guard';
import { isExplicitlyAllowed } from './callback-policy';
import type { AttemptResult, Delivery, OutboxEvent } from './outbox';
import { postSigned } from './webhook-post';

export type AttemptFn = (d: Delivery, e: OutboxEvent) => Promise<AttemptResult>;

/** `lookup`: how host names resolve (the system resolver unless a test gives its own). */
export function deliveryAttempt(settings: EventSettings, now: () => number, lookup?: HostLookup): AttemptFn {
  return (d, e) => {
    const { secret } = settings;
    if (!secret) return Promise.resolve({ error: 'PUSHDRAIN_WEBHOOK_SECRET is not set: nothing can sign the event' });
    const allowPrivate = d.kind === 'webhook' || isExplicitlyAllowed(settings.callbackOrigins, d.target);
    return postSigned({
      url: d.target,
      eventId: e.id,
      body: e.body,
      secret,
      allowPrivate,
      now,
      ...(lookup ? { lookup } : {}),
    });
  };
}
