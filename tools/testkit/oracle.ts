/**
 * An independent computation of the expected report, written without shared/billing:
 * BigInt arithmetic and a different half-even rounding, so a shared bug cannot hide.
 */
const RATES: Record<string, bigint> = { EU: 2000n, UK: 2000n, CA: 1300n, AU: 1000n, JP: 1000n, US: 0n };

export interface OracleTxn {
  id: string;
  account: string;
  type: 'charge' | 'refund';
  amount: number;
  currency: string;
  region?: string;
}

export function halfEven(numerator: bigint, denominator: bigint): bigint {
  const q = numerator / denominator;
  const twice = (numerator % denominator) * 2n;
  if (twice > denominator || (twice === denominator && q % 2n === 1n)) return q + 1n;
  return q;
}

export interface OracleRow {
  account?: string;
  currency: string;
  transactions: number;
  charges: number;
  refunds: number;
  net: number;
  tax: number;
  total: number;
}

export function expectedReport(txns: Iterable<OracleTxn>): {
  transactions: number;
  rows: OracleRow[];
  totals: OracleRow[];
} {
  const rows = new Map<
    string,
    { account: string; currency: string; n: number; c: bigint; r: bigint; net: bigint; tax: bigint }
  >();
  let count = 0;
  for (const t of txns) {
    count++;
    const bp = (t.region !== undefined ? RATES[t.region] : undefined) ?? 0n;
    const amount = BigInt(t.amount);
    const tax = halfEven(amount * bp, 10000n);
    const key = JSON.stringify([t.account, t.currency]);
    const row = rows.get(key) ?? { account: t.account, currency: t.currency, n: 0, c: 0n, r: 0n, net: 0n, tax: 0n };
    row.n++;
    if (t.type === 'charge') {
      row.c += amount;
      row.net += amount;
      row.tax += tax;
    } else {
      row.r += amount;
      row.net -= amount;
      row.tax -= tax;
    }
    rows.set(key, row);
  }
  const toRow = (r: {
    n: number;
    c: bigint;
    r: bigint;
    net: bigint;
    tax: bigint;
  }): Omit<OracleRow, 'account' | 'currency'> => ({
    transactions: r.n,
    charges: Number(r.c),
    refunds: Number(r.r),
    net: Number(r.net),
    tax: Number(r.tax),
    total: Number(r.net + r.tax),
  });
  const sorted = [...rows.values()].sort((a, b) =>
    a.account === b.account ? (a.currency < b.currency ? -1 : 1) : a.account < b.account ? -1 : 1,
  );
  const totals = new Map<string, { n: number; c: bigint; r: bigint; net: bigint; tax: bigint }>();
  for (const r of sorted) {
    const t = totals.get(r.currency) ?? { n: 0, c: 0n, r: 0n, net: 0n, tax: 0n };
    t.n += r.n;
    t.c += r.c;
    t.r += r.r;
    t.net += r.net;
    t.tax += r.tax;
    totals.set(r.currency, t);
  }
  return {
    transactions: count,
    rows: sorted.map((r) => ({ account: r.account, currency: r.currency, ...toRow(r) })),
    totals: [...totals.entries()]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([currency, t]) => ({ currency, ...toRow(t) })),
  };
}
