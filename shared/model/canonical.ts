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

/** Where the fields of a canonical line sit in its text (filled by readCanonical, reusable). */
export interface CanonicalSpans {
  /** End of the id; `{"id":"<id>","account":"<account>` runs from the line's start to accountEnd. */
  idEnd: number;
  accountStart: number;
  accountEnd: number;
  timestampEnd: number;
  charge: boolean;
  amount: number;
  currencyStart: number;
  /** -1 when the line has no region. */
  regionStart: number;
  regionEnd: number;
}

export function newSpans(): CanonicalSpans {
  return { idEnd: 0, accountStart: 0, accountEnd: 0, timestampEnd: 0, charge: true, amount: 0, currencyStart: 0, regionStart: -1, regionEnd: -1 };
}

/**
 * Finds the fields of a line in the canonical layout (the inverse of canonicalLine) in
 * s[from, to), without slicing anything; false when the line does not have that exact layout.
 * It does not validate the fields. A line it reads, whose fields then pass validation, is
 * exactly canonicalLine of them: the fields of a valid transaction hold no quote, so every
 * separator is found where canonicalLine put it, and the amount's digits are checked to be
 * canonical. Such a line is what JSON.parse would read, with no key twice.
 */
export function readCanonical(s: string, from: number, to: number, out: CanonicalSpans): boolean {
  // Every separator must be found before `to`, never in the next line of a chunk.
  if (!s.startsWith(P_ID, from)) return false;
  const a = s.indexOf(P_ACCOUNT, from + P_ID.length);
  const b = a < 0 || a >= to ? -1 : s.indexOf(P_TIMESTAMP, a + P_ACCOUNT.length);
  const c = b < 0 || b >= to ? -1 : s.indexOf(P_TYPE, b + P_TIMESTAMP.length);
  const d = c < 0 || c >= to ? -1 : s.indexOf(P_AMOUNT, c + P_TYPE.length);
  const e = d < 0 || d >= to ? -1 : s.indexOf(P_CURRENCY, d + P_AMOUNT.length);
  if (e < 0 || e >= to) return false;
  const typeStart = c + P_TYPE.length;
  const charge = d - typeStart === 6 && s.startsWith('charge', typeStart);
  if (!charge && !(d - typeStart === 6 && s.startsWith('refund', typeStart))) return false;
  const amount = digitsValue(s, d + P_AMOUNT.length, e);
  if (amount < 1) return false;
  const cur = e + P_CURRENCY.length;
  const rest = cur + 3;
  if (rest + 2 > to || s.charCodeAt(to - 2) !== 0x22 || s.charCodeAt(to - 1) !== 0x7d) return false;
  if (rest + 2 === to) out.regionStart = out.regionEnd = -1;
  else if (s.startsWith(P_REGION, rest)) {
    out.regionStart = rest + P_REGION.length;
    out.regionEnd = to - 2;
  } else return false;
  out.idEnd = a;
  out.accountStart = a + P_ACCOUNT.length;
  out.accountEnd = b;
  out.timestampEnd = c;
  out.charge = charge;
  out.amount = amount;
  out.currencyStart = cur;
  return true;
}

const spans = newSpans();

/** A canonical line as a transaction (see readCanonical), or undefined. */
export function parseCanonical(s: string, from = 0, to = s.length): Transaction | undefined {
  if (!readCanonical(s, from, to, spans)) return undefined;
  const t: Transaction = {
    id: s.slice(from + P_ID.length, spans.idEnd),
    account: s.slice(spans.accountStart, spans.accountEnd),
    timestamp: s.slice(spans.accountEnd + P_TIMESTAMP.length, spans.timestampEnd),
    type: spans.charge ? 'charge' : 'refund',
    amount: spans.amount,
    currency: s.slice(spans.currencyStart, spans.currencyStart + 3),
  };
  if (spans.regionStart >= 0) t.region = s.slice(spans.regionStart, spans.regionEnd);
  return t;
}
