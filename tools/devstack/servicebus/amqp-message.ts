/**
 * AMQP message helpers: batch unpacking, broker-assigned ids, and the Service Bus
 * annotations the SDK reads on every received message.
 */
import { randomUUID } from 'node:crypto';

import { type Message, message as amqp, type Typed, types } from 'rhea';

import type { CorrelationFilter } from './config';

/** Message format of a batch transfer: each inner message is an encoded AMQP message in a data section. */
export const BATCH_FORMAT = 0x80013700;

/** What a receiver is told about a message besides its own sections. */
export interface DeliveryView {
  sequenceNumber: number;
  enqueuedAt: number;
  deliveryCount: number;
  state: 'active' | 'deferred' | 'scheduled';
  /** Present for peekLock deliveries; the SDK's auto lock renewer requires it. */
  lockedUntil?: number;
  deadLetterSource?: string;
  /** Time-to-live the entity applied (ms); written to the header when the sender set none or a longer one. */
  ttlMs: number;
}

const STATE_CODES = { active: 0, deferred: 1, scheduled: 2 } as const;
const MAX_UINT = 0xffffffff;

/** The inner messages of a batch transfer. */
export function unpackBatch(data: Buffer): Message[] {
  const body: unknown = decodeMessage(data).body;
  const content: unknown = isRecord(body) ? body.content : undefined;
  const parts = Array.isArray(content) ? (content as unknown[]) : [content];
  return parts.filter((p): p is Buffer => Buffer.isBuffer(p)).map(decodeMessage);
}

/** rhea's decoder, typed as the Message its links use (the typings declare two Message types). */
export function decodeMessage(bytes: Buffer): Message {
  return amqp.decode(bytes) as unknown as Message;
}

/** rhea's encoder: the bytes the journal keeps for a message. */
export function encodeMessage(msg: Message): Buffer {
  return amqp.encode(msg);
}

/** Service Bus assigns a message id when the sender set none; the SDK's lock renewer looks messages up by it. */
export function withMessageId(msg: Message): Message {
  if (msg.message_id !== undefined && msg.message_id !== null) return msg;
  return { ...msg, message_id: randomUUID().replace(/-/g, '') };
}

/** `x-opt-scheduled-enqueue-time` in epoch ms, if the sender set one. */
export function scheduledEnqueueTime(msg: Message): number | undefined {
  const v: unknown = msg.message_annotations?.['x-opt-scheduled-enqueue-time'];
  if (v instanceof Date) return v.getTime();
  return typeof v === 'number' ? v : undefined;
}

/** The sender's own time-to-live (header `ttl`), or Infinity. */
export function messageTtl(msg: Message): number {
  return typeof msg.ttl === 'number' && msg.ttl > 0 ? msg.ttl : Infinity;
}

/** Correlation filter on application properties: every listed property must equal its value. */
export function matchesFilter(filter: CorrelationFilter, msg: Message): boolean {
  if (filter === null) return true;
  const props: Record<string, unknown> = msg.application_properties ?? {};
  return Object.entries(filter).every(([key, want]) => props[key] === want);
}

/** A copy with application properties added or replaced (dead-letter reason, propertiesToModify). */
export function withApplicationProperties(msg: Message, extra: Record<string, unknown>): Message {
  const defined = Object.entries(extra).filter(([, v]) => v !== undefined && v !== null);
  if (defined.length === 0) return msg;
  return { ...msg, application_properties: { ...(msg.application_properties ?? {}), ...Object.fromEntries(defined) } };
}

/** The bytes of a message as a receiver sees it: the sender's sections plus the broker's annotations. */
export function encodeForReceiver(msg: Message, view: DeliveryView): Buffer {
  const annotations: Record<string, unknown> = {
    ...(msg.message_annotations ?? {}),
    'x-opt-sequence-number': types.wrap_long(view.sequenceNumber),
    'x-opt-enqueue-sequence-number': types.wrap_long(view.sequenceNumber),
    'x-opt-enqueued-time': types.wrap_timestamp(view.enqueuedAt),
    'x-opt-message-state': types.wrap_int(STATE_CODES[view.state]),
  };
  if (view.lockedUntil !== undefined) annotations['x-opt-locked-until'] = types.wrap_timestamp(view.lockedUntil);
  if (view.deadLetterSource !== undefined) annotations['x-opt-deadletter-source'] = view.deadLetterSource;
  const out: Message = { ...msg, message_annotations: annotations, delivery_count: view.deliveryCount };
  delete out.delivery_annotations;
  if (view.ttlMs < Math.min(messageTtl(msg), MAX_UINT + 1)) out.ttl = view.ttlMs;
  return amqp.encode(out);
}

/** A typed AMQP long, as the management replies carry sequence numbers. */
export function longArray(values: number[]): Typed {
  return types.wrap_array(values, 0x81, undefined);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null;
}
