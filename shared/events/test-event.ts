/**
 * "Send a test event" (`POST /api/ops/webhooks/test`, the status page's button, `pushdrain webhooks
 * test`): one CloudEvent of its own type, `com.pushdrain.webhook.test`, to every PUSHDRAIN_WEBHOOK_URL,
 * through the very attempt real deliveries make (signing, SSRF guard, 10 s timeout, no redirect). It
 * is a probe, not an outbox entry: nothing is written, nothing retried, and a receiver that handles
 * only batch events can ignore the type. The answer says, per target, what came back and how fast.
 */
import { CloudEvent, HTTP } from 'cloudevents';

import { ValidationError } from '../errors';
import { redactError } from '../redaction';
import { newEventId } from './batch-event';
import type { AttemptFn } from './delivery-attempt';
import { displayTarget } from './event-delivery';
import { pendingDeliveries } from './outbox';

const TEST_EVENT_TYPE = 'com.pushdrain.webhook.test';

/** The test event's `source`: the route that sends it. */
const TEST_EVENT_SOURCE = '/api/ops/webhooks/test';

interface TestEventTarget {
  /** The endpoint without its query (a webhook URL may carry a token). */
  target: string;
  /** A 2xx answer. */
  ok: boolean;
  status?: number;
  /** From the start of the attempt (the host's resolution included) to its answer or failure. */
  ms: number;
  error?: string;
}

export interface TestEventResult {
  eventId: string;
  type: typeof TEST_EVENT_TYPE;
  targets: TestEventTarget[];
  /** How many targets did not answer 2xx. */
  failed: number;
}

export interface TestEventDeps {
  webhookUrls: () => readonly string[];
  attempt: AttemptFn;
  now: () => number;
}

/** The test event's structured-mode JSON. */
function testEventBody(id: string, at: Date): string {
  const event = new CloudEvent({
    id,
    type: TEST_EVENT_TYPE,
    source: TEST_EVENT_SOURCE,
    time: at.toISOString(),
    datacontenttype: 'application/json',
    data: { test: true, message: 'a test event from pushdrain: no batch is behind it' },
  });
  return HTTP.structured(event).body as string;
}

export class TestEvents {
  constructor(private readonly deps: TestEventDeps) {}

  /** One attempt per webhook, all at once; a 409 no_webhooks when none is configured. */
  async send(): Promise<TestEventResult> {
    const { webhookUrls, attempt, now } = this.deps;
    const urls = webhookUrls();
    if (urls.length === 0)
      throw new ValidationError('PUSHDRAIN_WEBHOOK_URL is not set: there is no webhook to send a test event to', {
        code: 'no_webhooks',
      });
    const id = newEventId();
    const started = now();
    const event = {
      id,
      type: TEST_EVENT_TYPE,
      body: testEventBody(id, new Date(started)),
      deliveries: pendingDeliveries(
        urls.map((target) => ({ kind: 'webhook' as const, target })),
        new Date(started).toISOString(),
      ),
    };
    const targets = await Promise.all(
      event.deliveries.map(async (d): Promise<TestEventTarget> => {
        const t0 = now();
        const result = await attempt(d, event);
        const ok =
          result.error === undefined && result.status !== undefined && result.status >= 200 && result.status < 300;
        return {
          target: displayTarget(d.target),
          ok,
          ...(result.status !== undefined ? { status: result.status } : {}),
          ms: Math.max(0, Math.round(now() - t0)),
          ...(result.error !== undefined ? { error: redactError(result.error) } : {}),
        };
      }),
    );
    return { eventId: id, type: TEST_EVENT_TYPE, targets, failed: targets.filter((t) => !t.ok).length };
  }
}
