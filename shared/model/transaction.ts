/**
 * The transaction schema (docs/ARCHITECTURE.md, "Transaction (input)") and its validation.
 * Unknown fields are rejected so that a typo is never silently dropped.
 */
import type { ErrorDetail } from '../errors';

export type TransactionType = 'charge' | 'refund';

export interface Transaction {
  id: string;
  account: string;
  timestamp: string;
  type: TransactionType;
  amount: number;
  currency: string;
  region?: string;
}

export const MAX_AMOUNT = 1_000_000_000;
export const MAX_TRANSACTIONS = 1_000_000;

const IDENT = /^[A-Za-z0-9._:-]{1,64}$/;
const CURRENCY = /^[A-Z]{3}$/;
const REGION = /^[A-Z0-9][A-Z0-9-]{0,15}$/;
const KNOWN = new Set(['id', 'account', 'timestamp', 'type', 'amount', 'currency', 'region']);

const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Proleptic Gregorian, as RFC 3339 uses (year 0000 is a leap year; Date.UTC would read it as 1900). */
function daysInMonth(y: number, mo: number): number {
  const leap = y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
  return mo === 2 && leap ? 29 : (DAYS[mo - 1] as number);
}

/** The value of `n` ASCII digits at `i`, or -1 if any of them is not 0-9. */
function digitsAt(s: string, i: number, n: number): number {
  let v = 0;
  for (let k = i; k < i + n; k++) {
    const c = s.charCodeAt(k) - 48;
    if (!(c >= 0 && c <= 9)) return -1; // also past the end, where c is NaN
    v = v * 10 + c;
  }
  return v;
}

/**
 * RFC 3339 date-time with real calendar bounds (no Feb 30, no hour 24):
 * `YYYY-MM-DD(T|t)hh:mm:ss[.f{1,9}](Z|z|±hh:mm)`, hours ≤ 23, minutes ≤ 59, seconds ≤ 60
 * (leap second), offset hours ≤ 23. Hand-scanned rather than a regex plus a Date: it runs
 * for every transaction, and was once the hottest function in the throughput profile.
 */
export function isRfc3339(value: string): boolean {
  const len = value.length;
  if (len < 20) return false;
  const y = digitsAt(value, 0, 4);
  const mo = digitsAt(value, 5, 2);
  const d = digitsAt(value, 8, 2);
  const h = digitsAt(value, 11, 2);
  const mi = digitsAt(value, 14, 2);
  const s = digitsAt(value, 17, 2);
  if (y < 0 || mo < 0 || d < 0 || h < 0 || mi < 0 || s < 0) return false;
  const t = value.charCodeAt(10);
  if (value.charCodeAt(4) !== 45 || value.charCodeAt(7) !== 45 || (t !== 84 && t !== 116) || value.charCodeAt(13) !== 58 || value.charCodeAt(16) !== 58) return false;
  let i = 19;
  if (value.charCodeAt(i) === 46) {
    let n = 0;
    for (i++; i < len && digitsAt(value, i, 1) >= 0; i++) n++;
    if (n < 1 || n > 9) return false;
  }
  const z = value.charCodeAt(i);
  if (z === 90 || z === 122) {
    if (i + 1 !== len) return false;
  } else if (z === 43 || z === 45) {
    if (i + 6 !== len || value.charCodeAt(i + 3) !== 58) return false;
    const oh = digitsAt(value, i + 1, 2);
    const om = digitsAt(value, i + 4, 2);
    if (oh < 0 || om < 0 || oh > 23 || om > 59) return false;
  } else return false;
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 60) return false;
  return d <= daysInMonth(y, mo);
}

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
 * Checks one parsed record. Returns the transaction (only known fields, fixed key order,
 * so chunk blobs are byte-identical for identical input) or the list of problems.
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
  else if (typeof v.timestamp !== 'string' || !isRfc3339(v.timestamp)) bad('timestamp', 'must be an RFC 3339 date-time');
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
  const t: Transaction = {
    id: v.id as string,
    account: v.account as string,
    timestamp: v.timestamp as string,
    type: v.type as TransactionType,
    amount: v.amount as number,
    currency: v.currency as string,
  };
  if (typeof v.region === 'string') t.region = v.region;
  return { ok: t };
}

/*
 * The canonical text of a transaction, written by ingest into chunk blobs and read back by
 * the map step: known fields, fixed key order, no whitespace, exactly what JSON.stringify
 * gives for a validated transaction. Both directions work by position and concatenation,
 * which is several times cheaper than JSON.stringify and JSON.parse.
 */
/**
 * Built by concatenation because no field of a valid transaction needs escaping (identifiers,
 * an RFC 3339 time, a currency and a region are all plain ASCII without quotes or
 * backslashes; the amount is an integer).
 */
export function canonicalLine(t: Transaction): string {
  const region = t.region === undefined ? '' : `,"region":"${t.region}"`;
  return `{"id":"${t.id}","account":"${t.account}","timestamp":"${t.timestamp}","type":"${t.type}","amount":${t.amount},"currency":"${t.currency}"${region}}`;
}

const P_ID = '{"id":"';
const P_ACCOUNT = '","account":"';
const P_TIMESTAMP = '","timestamp":"';
const P_TYPE = '","type":"';
const P_AMOUNT = '","amount":';
const P_CURRENCY = ',"currency":"';
const P_REGION = '","region":"';

/** The integer written at s[from, to) in canonical digits (no sign, no leading zero), or -1. */
function digitsValue(s: string, from: number, to: number): number {
  if (to <= from || to - from > 15 || s.charCodeAt(from) === 48) return -1;
  let v = 0;
  for (let i = from; i < to; i++) {
    const d = s.charCodeAt(i) - 48;
    if (!(d >= 0 && d <= 9)) return -1;
    v = v * 10 + d;
  }
  return v;
}

/**
 * Reads a line in the canonical layout by position (the inverse of canonicalLine), or
 * undefined when the line does not have that exact layout. It does not validate the fields.
 * A line it reads, whose fields then pass validateTransaction, is exactly canonicalLine of the
 * result: the fields of a valid transaction hold no quote, so every separator is found where
 * canonicalLine put it, and the amount's text is checked to be its canonical digits. Such a
 * line is what JSON.parse would read, with no key twice.
 */
export function parseCanonical(s: string, from = 0, to = s.length): Transaction | undefined {
  // Offsets let the map step read a line in place in the inflated chunk; every separator must
  // be found before `to`, never in the next line.
  if (!s.startsWith(P_ID, from)) return undefined;
  const a = s.indexOf(P_ACCOUNT, from + P_ID.length);
  const b = a < 0 || a >= to ? -1 : s.indexOf(P_TIMESTAMP, a + P_ACCOUNT.length);
  const c = b < 0 || b >= to ? -1 : s.indexOf(P_TYPE, b + P_TIMESTAMP.length);
  const d = c < 0 || c >= to ? -1 : s.indexOf(P_AMOUNT, c + P_TYPE.length);
  const e = d < 0 || d >= to ? -1 : s.indexOf(P_CURRENCY, d + P_AMOUNT.length);
  if (e < 0 || e >= to) return undefined;
  const type = s.slice(c + P_TYPE.length, d);
  const amount = digitsValue(s, d + P_AMOUNT.length, e);
  if ((type !== 'charge' && type !== 'refund') || amount < 1) return undefined;
  const cur = e + P_CURRENCY.length;
  const rest = cur + 3;
  if (rest + 2 > to || s.charCodeAt(to - 2) !== 0x22 || s.charCodeAt(to - 1) !== 0x7d) return undefined;
  const region = rest + 2 === to ? undefined : s.startsWith(P_REGION, rest) ? s.slice(rest + P_REGION.length, to - 2) : null;
  if (region === null) return undefined;
  const t: Transaction = {
    id: s.slice(from + P_ID.length, a),
    account: s.slice(a + P_ACCOUNT.length, b),
    timestamp: s.slice(b + P_TIMESTAMP.length, c),
    type: type as TransactionType,
    amount,
    currency: s.slice(cur, rest),
  };
  if (region !== undefined) t.region = region;
  return t;
}
