/**
 * The canonical text of a transaction, written by ingest into chunk blobs and read back by
 * the map step: known fields, fixed key order, no whitespace, exactly what JSON.stringify
 * gives for a validated transaction. Both directions work by position and concatenation,
 * which is several times cheaper than JSON.stringify and JSON.parse.
 */
import type { Transaction } from './transaction';

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
  const region =
    rest + 2 === to ? undefined : s.startsWith(P_REGION, rest) ? s.slice(rest + P_REGION.length, to - 2) : null;
  if (region === null) return undefined;
  const t: Transaction = {
    id: s.slice(from + P_ID.length, a),
    account: s.slice(a + P_ACCOUNT.length, b),
    timestamp: s.slice(b + P_TIMESTAMP.length, c),
    type,
    amount,
    currency: s.slice(cur, rest),
  };
  if (region !== undefined) t.region = region;
  return t;
}
