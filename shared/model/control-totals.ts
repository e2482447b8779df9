/**
 * Control totals: per (currency, type), how many transactions and the sum of their `amount`.
 * Ingest counts them from the body it accepts, the map step from each chunk it bills, and the
 * finalizer checks that the two agree (shared/billing/control-check.ts).
 *
 * Exact in a JSON number: a batch holds at most MAX_TRANSACTIONS of at most MAX_AMOUNT each, so
 * a sum is at most 10^15, below Number.MAX_SAFE_INTEGER (2^53 − 1 ≈ 9.007 × 10^15); every IEEE
 * double JSON parser reads it exactly. Sums read back from storage are checked to be safe integers.
 */
import type { Transaction, TransactionType } from './transaction';

export interface ControlSum {
  currency: string;
  type: TransactionType;
  count: number;
  /** The sum of `amount`, in minor units. */
  amount: number;
}

/** A batch's control totals as clients see them (the 202, the status, the batch event). */
export interface ControlTotals {
  transactions: number;
  /** sha256 (hex) of the body as accepted, after any gzip was inflated. */
  bodySha256: string;
  /** Sorted by currency, then `charge` before `refund`; a pair with no transaction is left out. */
  sums: ControlSum[];
}

/** Counts transactions into control sums; an add is a map lookup and two additions. */
export class ControlTally {
  /** currency → [charges, charge amount, refunds, refund amount] */
  private readonly byCurrency = new Map<string, [number, number, number, number]>();

  add(currency: string, type: TransactionType, amount: number): void {
    let s = this.byCurrency.get(currency);
    if (!s) {
      s = [0, 0, 0, 0];
      this.byCurrency.set(currency, s);
    }
    if (type === 'charge') {
      s[0]++;
      s[1] += amount;
    } else {
      s[2]++;
      s[3] += amount;
    }
  }

  sums(): ControlSum[] {
    const out: ControlSum[] = [];
    // Code-unit order (not locale order): the same on every machine.
    const currencies = [...this.byCurrency.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    for (const currency of currencies) {
      const [charges, chargeAmount, refunds, refundAmount] = this.byCurrency.get(currency) ?? [0, 0, 0, 0];
      if (charges > 0) out.push({ currency, type: 'charge', count: charges, amount: chargeAmount });
      if (refunds > 0) out.push({ currency, type: 'refund', count: refunds, amount: refundAmount });
    }
    return out;
  }
}

/** The control sums of some transactions (a chunk's, in the map step). */
export function controlSumsOf(txns: readonly Transaction[]): ControlSum[] {
  const tally = new ControlTally();
  for (const t of txns) tally.add(t.currency, t.type, t.amount);
  return tally.sums();
}

/** Control sums as a compact row `[currency, type, count, amount]` (the result blob's `inputs`). */
type CompactControlSum = [string, TransactionType, number, number];

export function compactSum(s: ControlSum): CompactControlSum {
  return [s.currency, s.type, s.count, s.amount];
}

/** A compact row read back from storage, checked: a bad one throws. */
export function sumOf(r: unknown): ControlSum {
  if (!Array.isArray(r) || r.length !== 4) throw new Error('bad control sum');
  const [currency, type, count, amount] = r as CompactControlSum;
  if (typeof currency !== 'string' || (type !== 'charge' && type !== 'refund')) throw new Error('bad control sum');
  if (!Number.isSafeInteger(count) || !Number.isSafeInteger(amount) || count < 0 || amount < 0)
    throw new Error('bad control sum');
  return { currency, type, count, amount };
}
