import { ConfigError } from '../errors';

/** Tax rate per region code, in basis points (2000 = 20 %). */
export type TaxRates = Record<string, number>;

/** The default rates of docs/ARCHITECTURE.md (Billing); any other region, or none, is taxed at 0. */
export const DEFAULT_TAX_RATES: Readonly<TaxRates> = Object.freeze({
  EU: 2000,
  UK: 2000,
  CA: 1300,
  AU: 1000,
  JP: 1000,
  US: 0,
});

/** Parses `EU:2000,UK:2000,…`; rates are whole basis points from 0 to 10000. */
export function parseTaxRates(setting: string, raw: string): TaxRates {
  const rates: TaxRates = {};
  for (const part of raw.split(',')) {
    const m = /^\s*([A-Za-z0-9_-]{1,16})\s*[:=]\s*(\d{1,5})\s*$/.exec(part);
    if (!m?.[1] || m[2] === undefined)
      throw new ConfigError(setting, `expected REGION:basisPoints pairs separated by commas, got "${part.trim()}"`);
    const bp = Number(m[2]);
    if (bp > 10_000) throw new ConfigError(setting, `rate for ${m[1]} must be 0–10000 basis points, got ${bp}`);
    rates[m[1]] = bp;
  }
  return rates;
}
