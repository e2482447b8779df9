/**
 * The transaction's rules (docs/ARCHITECTURE.md, "Transaction (input)"). Unknown fields are
 * rejected so that a typo is never silently dropped.
 */
import type { ErrorDetail } from '../errors';
import { isRfc3339 } from './rfc3339';
import { MAX_AMOUNT, type Transaction, type TransactionType } from './transaction';

const IDENT = /^[A-Za-z0-9._:-]{1,64}$/;
const CURRENCY = /^[A-Z]{3}$/;
const REGION = /^[A-Z0-9][A-Z0-9-]{0,15}$/;
const KNOWN = new Set(['id', 'account', 'timestamp', 'type', 'amount', 'currency', 'region']);

/**
 * validateTransaction's verdict, without the details or the copy, for an object that has only
 * the known fields (a record read by position, see parseCanonical): the common case, cheaply.
 */
export function isValidTransaction(t: Transaction): boolean {
  return (
    IDENT.test(t.id) &&
    IDENT.test(t.account) &&
    isRfc3339(t.timestamp) &&
    (t.type === 'charge' || t.type === 'refund') &&
    Number.isInteger(t.amount) &&
    t.amount >= 1 &&
    t.amount <= MAX_AMOUNT &&
    CURRENCY.test(t.currency) &&
    (t.region === undefined || REGION.test(t.region))
  );
}

/**
 * Checks one parsed record. Returns the transaction (see toTransaction) or the list of
 * problems.
 */
export function validateTransaction(value: unknown, line: number): { ok: Transaction } | { errors: ErrorDetail[] } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { errors: [{ line, field: '', message: 'transaction must be a JSON object' }] };
  }
  const v = value as Record<string, unknown>;
  const errors: ErrorDetail[] = [];
  const bad = (field: string, message: string): void => {
    errors.push({ line, field, message });
  };
  for (const key of Object.keys(v)) if (!KNOWN.has(key)) bad(key, 'unknown field');
  for (const field of ['id', 'account'] as const) {
    const f = v[field];
    if (f === undefined) bad(field, 'is required');
    else if (typeof f !== 'string' || !IDENT.test(f)) bad(field, 'must be 1-64 characters of A-Z a-z 0-9 . _ : -');
  }
  if (v.timestamp === undefined) bad('timestamp', 'is required');
  else if (typeof v.timestamp !== 'string' || !isRfc3339(v.timestamp))
    bad('timestamp', 'must be an RFC 3339 date-time');
  if (v.type === undefined) bad('type', 'is required');
  else if (v.type !== 'charge' && v.type !== 'refund') bad('type', 'must be "charge" or "refund"');
  if (v.amount === undefined) bad('amount', 'is required');
  else if (typeof v.amount !== 'number' || !Number.isInteger(v.amount) || v.amount < 1 || v.amount > MAX_AMOUNT) {
    bad('amount', `must be an integer number of minor units from 1 to ${MAX_AMOUNT}`);
  }
  if (v.currency === undefined) bad('currency', 'is required');
  else if (typeof v.currency !== 'string' || !CURRENCY.test(v.currency)) bad('currency', 'must be 3 uppercase letters');
  if (v.region !== undefined && v.region !== null && (typeof v.region !== 'string' || !REGION.test(v.region))) {
    bad('region', 'must be 1-16 characters of A-Z 0-9 - (a tax region code)');
  }
  if (errors.length > 0) return { errors };
  return { ok: toTransaction(v) };
}

/**
 * The transaction in a parsed record that the rules accept: only the known fields, in a fixed
 * key order (so chunk blobs are byte-identical for identical input), a null region left out.
 * It checks nothing, so it is only for a record that validateTransaction has accepted, or that
 * is read again from bytes proven to be the ones it accepted.
 */
export function toTransaction(v: Record<string, unknown>): Transaction {
  const t: Transaction = {
    id: v.id as string,
    account: v.account as string,
    timestamp: v.timestamp as string,
    type: v.type as TransactionType,
    amount: v.amount as number,
    currency: v.currency as string,
  };
  if (typeof v.region === 'string') t.region = v.region;
  return t;
}
