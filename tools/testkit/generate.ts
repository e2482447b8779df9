/** Seeded, realistic transactions: Zipf-ish accounts, several currencies and regions, charges and refunds. */
import type { Transaction } from '../../shared/model/transaction';

export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const CURRENCIES = ['EUR', 'USD', 'GBP', 'JPY', 'CAD', 'AUD'];
const REGIONS = ['EU', 'UK', 'CA', 'AU', 'JP', 'US', 'BR', undefined];

export function generate(count: number, seed = 1, accounts = 500): Transaction[] {
  const r = rng(seed);
  const out: Transaction[] = [];
  const base = Date.UTC(2026, 0, 1);
  for (let i = 0; i < count; i++) {
    // Zipf-like: account k with probability ~ 1/k.
    const account = `acct-${Math.floor(Math.pow(accounts, r())) - 1}`;
    const t: Transaction = {
      id: `tx-${seed}-${i}`,
      account,
      timestamp: new Date(base + Math.floor(r() * 3e10)).toISOString(),
      type: r() < 0.9 ? 'charge' : 'refund',
      amount: 1 + Math.floor(Math.pow(r(), 3) * 1_000_000),
      currency: CURRENCIES[Math.floor(r() * CURRENCIES.length)] as string,
    };
    const region = REGIONS[Math.floor(r() * REGIONS.length)];
    if (region !== undefined) t.region = region;
    out.push(t);
  }
  return out;
}

export function toNdjson(txns: readonly unknown[]): Buffer {
  return Buffer.from(txns.map((t) => JSON.stringify(t)).join('\n') + '\n', 'utf8');
}
