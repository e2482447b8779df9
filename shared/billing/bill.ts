/**
 * The map step: bill each transaction of a chunk, and sum per (account, currency).
 * A charge is positive, a refund negative in net, tax and total alike.
 */
import type { TaxRates } from '../config/tax-rates';
import type { Transaction } from '../model/transaction';

export interface Sums {
  transactions: number;
  charges: number;
  refunds: number;
  net: number;
  tax: number;
  total: number;
}

export interface ReportRow extends Sums {
  account: string;
  currency: string;
}

export interface TotalsRow extends Sums {
  currency: string;
}

export interface BillingLine {
  id: string;
  account: string;
  currency: string;
  type: Transaction['type'];
  net: number;
  tax: number;
  total: number;
}

/**
 * A billed chunk: its per-(account, currency) sums, in first-seen order (deterministic for the
 * chunk's bytes; the report sorts its rows), and how many transactions it held. No billing line
 * per transaction: nothing reads one, and building, serializing and storing them was about a
 * fifth of the map step's CPU.
 */
export interface ChunkBill {
  partials: ReportRow[];
  count: number;
}

export function zeroSums(): Sums {
  return { transactions: 0, charges: 0, refunds: 0, net: 0, tax: 0, total: 0 };
}

/** Adds b into a; guards the exactness promise (integers past 2^53 would round silently). */
export function addSums(a: Sums, b: Sums): void {
  a.transactions += b.transactions;
  a.charges += b.charges;
  a.refunds += b.refunds;
  a.net += b.net;
  a.tax += b.tax;
  a.total += b.total;
  if (!Number.isSafeInteger(a.charges) || !Number.isSafeInteger(a.refunds) || !Number.isSafeInteger(a.total)) {
    throw new RangeError('billing sums exceed 2^53: exact arithmetic cannot be guaranteed');
  }
}

export function billTransaction(t: Transaction, rates: TaxRates): BillingLine {
  const sign = t.type === 'charge' ? 1 : -1;
  const tax = taxOf(t.amount, rateFor(rates, t.region));
  return {
    id: t.id,
    account: t.account,
    currency: t.currency,
    type: t.type,
    net: sign * t.amount,
    tax: sign * tax,
    total: sign * (t.amount + tax),
  };
}

export function billChunk(txns: readonly Transaction[], rates: TaxRates): ChunkBill {
  // account → currency → row: no key string and no object per transaction (billTransaction's
  // line is the same arithmetic, kept for the one-transaction view).
  const byAccount = new Map<string, Map<string, ReportRow>>();
  const rows: ReportRow[] = [];
  for (let i = 0; i < txns.length; i++) {
    const t = txns[i] as Transaction;
    let byCurrency = byAccount.get(t.account);
    if (!byCurrency) {
      byCurrency = new Map();
      byAccount.set(t.account, byCurrency);
    }
    let row = byCurrency.get(t.currency);
    if (!row) {
      row = { account: t.account, currency: t.currency, ...zeroSums() };
      byCurrency.set(t.currency, row);
      rows.push(row);
    }
    const tax = taxOf(t.amount, rateFor(rates, t.region));
    row.transactions++;
    if (t.type === 'charge') {
      row.charges += t.amount;
      row.net += t.amount;
      row.tax += tax;
      row.total += t.amount + tax;
    } else {
      row.refunds += t.amount;
      row.net -= t.amount;
      row.tax -= tax;
      row.total -= t.amount + tax;
    }
    if (!Number.isSafeInteger(row.charges) || !Number.isSafeInteger(row.refunds) || !Number.isSafeInteger(row.total)) {
      throw new RangeError('billing sums exceed 2^53: exact arithmetic cannot be guaranteed');
    }
  }
  return { partials: rows, count: txns.length };
}

/** Code-unit order, not locale order: the report must be the same on every machine. */
export function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function sortRows(rows: ReportRow[]): ReportRow[] {
  return rows.sort((x, y) => compareText(x.account, y.account) || compareText(x.currency, y.currency));
}

/**
 * round-half-even(amount × bp / 10000) in exact integer arithmetic. amount ≤ 1e9 and
 * bp ≤ 1e4, so the product stays far below 2^53 and Number is exact here.
 */
export function taxOf(amount: number, bp: number): number {
  const product = amount * bp;
  const q = Math.floor(product / 10_000);
  const r = product - q * 10_000;
  if (r * 2 > 10_000) return q + 1;
  if (r * 2 < 10_000) return q;
  return q % 2 === 0 ? q : q + 1;
}

/** Any other region, or none, is taxed at 0. */
function rateFor(rates: TaxRates, region: string | undefined): number {
  if (region === undefined) return 0;
  return Object.prototype.hasOwnProperty.call(rates, region) ? (rates[region] ?? 0) : 0;
}
