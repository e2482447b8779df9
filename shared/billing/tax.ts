import type { TaxRates } from '../config/tax-rates';

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
