/**
 * How the SDK says complete / abandon / defer / dead-letter, on a link (delivery outcomes)
 * and on `$management` (`update-disposition`), mapped to one Settlement type.
 */
import { type AmqpError, message as amqp } from 'rhea';

import type { Settlement } from './stored-message';

export type OutcomeKind = 'accepted' | 'rejected' | 'modified' | 'released';

export const LOCK_LOST: AmqpError = {
  condition: 'com.microsoft:message-lock-lost',
  description:
    'The lock supplied is invalid. Either the lock expired, or the message has already been removed from the queue.',
};

/** rhea's outcome constructors exist at runtime but are missing from its typings. */
interface Composite {
  described(): unknown;
}
const outcomes = amqp as unknown as {
  accepted(): Composite;
  rejected(fields: { error?: AmqpError }): Composite;
  modified(fields: Record<string, unknown>): Composite;
  released(): Composite;
};

const DEAD_LETTER_INFO_KEYS = new Set(['DeadLetterReason', 'DeadLetterErrorDescription']);

/** The settlement a link outcome asks for; undefined for `released` (not delivered at all). */
export function settlementFromOutcome(kind: OutcomeKind, state: unknown): Settlement | undefined {
  const s = isRecord(state) ? state : {};
  switch (kind) {
    case 'accepted':
      return { kind: 'complete' };
    case 'released':
      return undefined;
    case 'modified': {
      const properties = recordOrUndefined(s.message_annotations);
      return { kind: s.undeliverable_here === true ? 'defer' : 'abandon', properties };
    }
    case 'rejected': {
      const error = isRecord(s.error) ? s.error : {};
      const info = isRecord(error.info) ? error.info : {};
      const properties = Object.fromEntries(Object.entries(info).filter(([k]) => !DEAD_LETTER_INFO_KEYS.has(k)));
      return {
        kind: 'deadletter',
        reason: stringOrUndefined(info.DeadLetterReason),
        description: stringOrUndefined(info.DeadLetterErrorDescription),
        properties,
      };
    }
  }
}

/** The settled outcome the broker sends back: the SDK treats any `error` on it as failure. */
export function replyOutcome(kind: OutcomeKind, ok: boolean): unknown {
  if (!ok) return outcomes.rejected({ error: LOCK_LOST }).described();
  switch (kind) {
    case 'accepted':
      return outcomes.accepted().described();
    case 'rejected':
      return outcomes.rejected({}).described();
    case 'modified':
      return outcomes.modified({}).described();
    case 'released':
      return outcomes.released().described();
  }
}

/** `update-disposition` body → settlement; undefined for an unknown status. */
export function settlementFromDisposition(body: Record<string, unknown>): Settlement | undefined {
  const properties = recordOrUndefined(body['properties-to-modify']);
  switch (body['disposition-status']) {
    case 'completed':
      return { kind: 'complete' };
    case 'abandoned':
      return { kind: 'abandon', properties };
    case 'defered': // sic: the SDK's spelling
    case 'deferred':
      return { kind: 'defer', properties };
    case 'suspended':
      return {
        kind: 'deadletter',
        reason: stringOrUndefined(body['deadletter-reason']),
        description: stringOrUndefined(body['deadletter-description']),
        properties,
      };
    default:
      return undefined;
  }
}

function recordOrUndefined(v: unknown): Record<string, unknown> | undefined {
  return isRecord(v) && Object.keys(v).length > 0 ? v : undefined;
}

function stringOrUndefined(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !Buffer.isBuffer(v);
}
