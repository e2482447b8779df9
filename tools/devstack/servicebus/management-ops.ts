/**
 * The `$management` operations the SDK uses, each a function from a request body to a reply.
 * Lock tokens arrive as RFC-order uuids; sequence numbers as AMQP longs (number or 8-byte buffer).
 */
import { types } from 'rhea';

import { decodeMessage, encodeForReceiver, longArray, withMessageId } from './amqp-message';
import type { ReceiveEntity } from './entities';
import { lockTokenFromUuid, uuidBytes } from './lock-token';
import type { SendTarget } from './send-target';
import { LOCK_LOST, settlementFromDisposition } from './settlement';
import type { StoredMessage } from './stored-message';

export interface ManagementReply {
  status: number;
  condition?: string;
  description?: string;
  body?: unknown;
}

interface OperationContext {
  target: SendTarget | undefined;
  /** The drop fault is on for `target`: schedules are answered but kept nowhere. */
  dropSends: boolean;
  receive: ReceiveEntity | undefined;
  body: Record<string, unknown>;
  now: number;
}

type Operation = (ctx: OperationContext) => ManagementReply;

const OK: ManagementReply = { status: 200 };
const NO_ENTITY: ManagementReply = {
  status: 404,
  condition: 'amqp:not-found',
  description: 'No such entity for this operation',
};
const LOCK_LOST_REPLY: ManagementReply = {
  status: 410,
  condition: LOCK_LOST.condition,
  description: LOCK_LOST.description,
};

export const OPERATIONS: Readonly<Record<string, Operation>> = {
  'com.microsoft:schedule-message': ({ target, dropSends, body, now }) => {
    if (!target) return NO_ENTITY;
    const seqs = asArray(body.messages).map((entry) => {
      const encoded: unknown = isRecord(entry) ? entry.message : undefined;
      if (!Buffer.isBuffer(encoded)) throw new Error('schedule-message: entry without an encoded message');
      if (dropSends) return target.discard();
      const msg = withMessageId(decodeMessage(encoded));
      const at: unknown = msg.message_annotations?.['x-opt-scheduled-enqueue-time'];
      return target.schedule(msg, at instanceof Date ? at.getTime() : now);
    });
    return { status: 200, body: { 'sequence-numbers': longArray(seqs) } };
  },

  'com.microsoft:cancel-scheduled-message': ({ target, body }) => {
    if (!target) return NO_ENTITY;
    for (const seq of asArray(body['sequence-numbers']).map(toNumber)) target.cancel(seq);
    return OK;
  },

  'com.microsoft:peek-message': ({ receive, body }) => {
    if (!receive) return NO_ENTITY;
    const from = toNumber(body['from-sequence-number']);
    const count = toNumber(body['message-count']);
    const peeked = receive.store.peek(from, count);
    if (peeked.length === 0) return { status: 204, description: 'No messages to peek' };
    const messages = peeked.map((p) => ({ message: encode(p.message, p.state) }));
    return { status: 200, body: { messages } };
  },

  'com.microsoft:renew-lock': ({ receive, body }) => {
    if (!receive) return NO_ENTITY;
    const expirations: number[] = [];
    for (const token of lockTokens(body)) {
      const until = token === undefined ? undefined : receive.store.renew(token);
      if (until === undefined) return LOCK_LOST_REPLY;
      expirations.push(until);
    }
    return { status: 200, body: { expirations: types.wrap_array(expirations, 0x83, undefined) } };
  },

  'com.microsoft:receive-by-sequence-number': ({ receive, body }) => {
    if (!receive) return NO_ENTITY;
    const taken = receive.store.takeDeferred(asArray(body['sequence-numbers']).map(toNumber));
    if (!taken) {
      return {
        status: 404,
        condition: 'com.microsoft:message-not-found',
        description: 'No deferred message has that sequence number',
      };
    }
    const peekLock = toNumber(body['receiver-settle-mode'] ?? 1) === 1;
    const messages = taken.map((m) => {
      if (!peekLock) {
        receive.store.discard(m);
        return { message: encode(m, 'deferred') };
      }
      const lock = receive.store.lock(m, 'deferred');
      return {
        'lock-token': types.wrap_uuid(uuidBytes(lock.token.id)),
        message: encode(m, 'deferred', lock.lockedUntil),
      };
    });
    return { status: 200, body: { messages } };
  },

  'com.microsoft:update-disposition': ({ receive, body }) => {
    if (!receive) return NO_ENTITY;
    const settlement = settlementFromDisposition(body);
    if (!settlement) return { status: 400, condition: 'amqp:invalid-field', description: 'Unknown disposition-status' };
    for (const token of lockTokens(body)) {
      if (token === undefined || !receive.store.settle(token, settlement)) return LOCK_LOST_REPLY;
    }
    return OK;
  },
};

function encode(m: StoredMessage, state: 'active' | 'deferred', lockedUntil?: number): Buffer {
  return encodeForReceiver(m.payload, {
    sequenceNumber: m.sequenceNumber,
    enqueuedAt: m.enqueuedAt,
    deliveryCount: m.deliveryCount,
    state,
    lockedUntil,
    deadLetterSource: m.deadLetterSource,
    ttlMs: m.ttlMs,
  });
}

function lockTokens(body: Record<string, unknown>): Array<string | undefined> {
  return asArray(body['lock-tokens']).map((t) => (Buffer.isBuffer(t) ? lockTokenFromUuid(t) : undefined));
}

/** AMQP long as decoded by rhea: a number, or an 8-byte big-endian buffer beyond 2^53. */
function toNumber(v: unknown): number {
  if (typeof v === 'number') return v;
  if (Buffer.isBuffer(v) && v.length === 8) return Number(v.readBigInt64BE(0));
  throw new Error(`expected a number, got ${typeof v}`);
}

function asArray(v: unknown): unknown[] {
  return Array.isArray(v) ? (v as unknown[]) : [];
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !Buffer.isBuffer(v);
}
