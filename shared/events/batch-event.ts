/**
 * The batch event, a CloudEvents 1.0 event in structured JSON mode (`application/cloudevents+json`),
 * built with the `cloudevents` SDK: `com.pushdrain.batch.completed` or `…failed`, subject = the
 * batch id, time = its completedAt, data = its status body, the report's path and a summary (the
 * transactions and the totals per currency; never a transaction row), and the CloudEvents
 * distributed-tracing extension: `traceparent` of the work that produced the event (the batch's
 * finalize span), so a receiver's span continues the batch's trace. The event's bytes are fixed
 * when the batch becomes terminal: every attempt, retry and redelivery after a crash carries that
 * same context, never the context of the attempt that happens to send it.
 */
import { randomUUID } from 'node:crypto';

import { CloudEvent, HTTP } from 'cloudevents';

import type { Recipient } from '../auth/principal';
import { type BatchStatus, batchStatus } from '../batch/batch-status';
import type { Manifest } from '../batch/manifest';
import type { TotalsRow } from '../billing/bill';
import type { Report } from '../billing/report';
import { PermanentError } from '../errors';
import { checkedTraceparent } from '../telemetry/telemetry';
import { type DeliveryKind, type OutboxEvent, pendingDeliveries } from './outbox';

const BATCH_EVENT_TYPES = {
  completed: 'com.pushdrain.batch.completed',
  failed: 'com.pushdrain.batch.failed',
} as const;

/** The event's `source`: where batches live in the HTTP API. */
export const BATCH_EVENT_SOURCE = '/api/batches';

export const CLOUDEVENTS_CONTENT_TYPE = 'application/cloudevents+json; charset=utf-8';

interface BatchEventData extends BatchStatus {
  /** `GET` this for the report rows (completed batches only). */
  reportPath?: string;
  /** Whom the event belongs to: a receiver refuses one that does not name it (README). */
  recipient: Recipient;
  summary: { transactions: number; totals: TotalsRow[] };
}

/** A new id per event (not per attempt): `evt_` and a UUID. */
export function newEventId(): string {
  return `evt_${randomUUID()}`;
}

/** The CloudEvents distributed-tracing extension attributes of an event produced under `traceparent`. */
function traceExtension(traceparent: string | undefined, tracestate?: string): Record<string, string> {
  const tp = checkedTraceparent(traceparent);
  if (!tp) return {};
  return { traceparent: tp, ...(tracestate ? { tracestate } : {}) };
}

/** The structured-mode JSON of a terminal batch's event, produced under `traceparent` when there is one. */
export function batchEventBody(
  m: Manifest,
  report: Report | undefined,
  ids: { id: string; traceparent?: string | undefined },
): { type: string; body: string } {
  const { id } = ids;
  const status = batchStatus(m);
  if (!status || (status.status !== 'completed' && status.status !== 'failed') || !m.completedAt)
    throw new PermanentError(`batch ${m.batchId} is not completed or failed: it has no event`);
  const type = BATCH_EVENT_TYPES[status.status];
  const data: BatchEventData = {
    ...status,
    ...(status.status === 'completed' ? { reportPath: `/api/batches/${m.batchId}/report` } : {}),
    recipient: manifestRecipient(m),
    summary: { transactions: m.transactions, totals: report?.totals ?? [] },
  };
  const event = new CloudEvent<BatchEventData>({
    id,
    type,
    source: BATCH_EVENT_SOURCE,
    subject: m.batchId,
    time: m.completedAt,
    datacontenttype: 'application/json',
    data,
    ...traceExtension(ids.traceparent),
  });
  return { type, body: HTTP.structured(event).body as string };
}

/**
 * The recipient a manifest records; one written before it did is read conservatively: a token's
 * batch names its user's object id (an app's receiver, which checks its application id, refuses it).
 */
function manifestRecipient(m: Manifest): Recipient {
  if (m.recipient) return m.recipient;
  if (m.submitter) return { kind: 'user', id: m.submitter.objectId };
  return { kind: m.source === 'sweep' ? 'sweep' : 'key' };
}

/**
 * The outbox entry for a manifest just marked terminal: its event, one pending delivery per
 * target, due now, and the topic that gets it too. Undefined when there is nowhere to deliver.
 */
interface OutboxEventOptions {
  targets: readonly { kind: DeliveryKind; target: string }[];
  /** The topic that gets the event too. */
  topic?: string;
  /** The W3C context of the work that produced the event. */
  traceparent?: string;
}

export function outboxEvent(
  m: Manifest,
  report: Report | undefined,
  { targets, topic, traceparent }: OutboxEventOptions,
): OutboxEvent | undefined {
  if ((targets.length === 0 && topic === undefined) || !m.completedAt) return undefined;
  const id = newEventId();
  const { type, body } = batchEventBody(m, report, { id, traceparent });
  return { id, type, body, deliveries: pendingDeliveries(targets, m.completedAt), ...(topic ? { topic } : {}) };
}
