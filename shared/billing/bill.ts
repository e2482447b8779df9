/**
 * The map step: bill each transaction of a chunk, and sum per (account, currency).
 * A charge is positive, a refund negative in net, tax and total alike. Each transaction's
 * billing is kept as the text of its result line (BillingLine as JSON), written directly.
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

/** One line of a chunk result (its JSON shape). */
export interface BillingLine {
  id: string;
  account: string;
  currency: string;
  type: Transaction['type'];
  net: number;
  tax: number;
  total: number;
}

export interface ChunkBill {
  partials: ReportRow[];
  /** One BillingLine per transaction, as JSON text. */
  lines: string[];
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

/**
 * Bills a chunk's transactions one by one. `add` takes the fields, so the map step can feed it
 * straight from a chunk's text without building transaction objects; `head` is the start of
 * the result line, `{"id":"<id>","account":"<account>` (the canonical line begins the same way).
 */
export class ChunkBiller {
  // account → currency → row: no key string per transaction.
  private readonly byAccount = new Map<string, Map<string, ReportRow>>();
  private readonly rows: ReportRow[] = [];
  private readonly lines: string[] = [];

  constructor(private readonly rates: TaxRates) {}

  add(head: string, account: string, currency: string, charge: boolean, amount: number, region: string | undefined): void {
    const sign = charge ? 1 : -1;
    const tax = taxOf(amount, rateFor(this.rates, region));
    const net = sign * amount;
    const total = sign * (amount + tax);
    // JSON.stringify of the BillingLine, built directly: no field here needs escaping.
    this.lines.push(`${head}","currency":"${currency}","type":"${charge ? 'charge' : 'refund'}","net":${net},"tax":${sign * tax},"total":${total}}`);
    let byCurrency = this.byAccount.get(account);
    if (!byCurrency) {
      byCurrency = new Map();
      this.byAccount.set(account, byCurrency);
    }
    let row = byCurrency.get(currency);
    if (!row) {
      row = { account, currency, ...zeroSums() };
      byCurrency.set(currency, row);
      this.rows.push(row);
    }
    row.transactions++;
    if (charge) row.charges += amount;
    else row.refunds += amount;
    row.net += net;
    row.tax += sign * tax;
    row.total += total;
    if (!Number.isSafeInteger(row.charges) || !Number.isSafeInteger(row.refunds) || !Number.isSafeInteger(row.total)) {
      throw new RangeError('billing sums exceed 2^53: exact arithmetic cannot be guaranteed');
    }
  }

  addTransaction(t: Transaction): void {
    this.add(`{"id":"${t.id}","account":"${t.account}`, t.account, t.currency, t.type === 'charge', t.amount, t.region);
  }

  finish(): ChunkBill {
    return { partials: sortRows(this.rows), lines: this.lines };
  }
}

export function billChunk(txns: readonly Transaction[], rates: TaxRates): ChunkBill {
  const biller = new ChunkBiller(rates);
  for (const t of txns) biller.addTransaction(t);
  return biller.finish();
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
export function rateFor(rates: TaxRates, region: string | undefined): number {
  if (region === undefined) return 0;
  return Object.prototype.hasOwnProperty.call(rates, region) ? (rates[region] ?? 0) : 0;
}
