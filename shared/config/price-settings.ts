/**
 * List prices for the cost estimate of a batch (shared/cost/batch-cost.ts), in USD, each a
 * setting, for the classes infra/main.bicep deploys: Flex Consumption on demand, a Standard
 * general-purpose v2 LRS account (hot blobs), Service Bus Standard. Flex's are East US's, its
 * execution time checked against a dated source (PRICE_SHEET_DATE); Storage's are West US's and
 * Service Bus's West Europe's, the Retail Prices API's figures as infracost's test fixtures record
 * them, since Azure's price pages fill in their figures in the browser (docs/DESIGN.md, "What a
 * batch cost"). Set them to your own region's and agreement's prices; the estimate names the date
 * only with the defaults.
 */
import { z } from 'zod';

import { ConfigError } from '../errors';
import type { Env } from './connections';

/** The date of the source behind the Flex execution-time default. */
export const PRICE_SHEET_DATE = '2025-05-22';

export interface Prices {
  /** Flex Consumption on-demand execution time, per GB-second. */
  flexGbSecond: number;
  /** Flex Consumption on-demand executions, per million. */
  flexMillionExecutions: number;
  /** The instance memory size the execution time is billed at (infra/main.bicep's `instanceMemoryMB`). */
  flexMemoryMb: number;
  /** Blob write operations (put, put block, put block list, copy, lease, list, create container), per 10,000. */
  blobWrite10k: number;
  /** Blob read and other operations (get, properties, metadata), per 10,000. */
  blobRead10k: number;
  /** Queue operations (put, get, peek, delete, update, metadata), per 10,000. */
  queue10k: number;
  /** Service Bus Standard operations, per million (the 13M–100M band; the base charge is not a batch's). */
  serviceBusMillionOperations: number;
}

/** Each price: its setting and its default. */
export const PRICE_SETTINGS: Readonly<Record<keyof Prices, { setting: string; def: number }>> = {
  flexGbSecond: { setting: 'PUSHDRAIN_PRICE_FLEX_GB_SECOND', def: 0.000026 },
  flexMillionExecutions: { setting: 'PUSHDRAIN_PRICE_FLEX_MILLION_EXECUTIONS', def: 0.4 },
  flexMemoryMb: { setting: 'PUSHDRAIN_PRICE_FLEX_MEMORY_MB', def: 2048 },
  blobWrite10k: { setting: 'PUSHDRAIN_PRICE_BLOB_WRITE_10K', def: 0.055 },
  blobRead10k: { setting: 'PUSHDRAIN_PRICE_BLOB_READ_10K', def: 0.0044 },
  queue10k: { setting: 'PUSHDRAIN_PRICE_QUEUE_10K', def: 0.004 },
  serviceBusMillionOperations: { setting: 'PUSHDRAIN_PRICE_SERVICE_BUS_MILLION_OPERATIONS', def: 0.8 },
};

/** A price as written: a plain decimal, at least 0, at most 1,000,000 (no exponent, no currency sign). */
const price = z
  .string()
  .trim()
  .regex(/^\d{1,7}(\.\d{1,12})?$/, { error: (i) => `must be a decimal number such as 0.055, got "${String(i.input)}"` })
  .transform(Number)
  .pipe(z.number().max(1_000_000, { error: 'must be at most 1000000' }));

export interface PriceSettings {
  prices: Prices;
  /** True when every price is its default: the estimate then names the sheet's date. */
  defaults: boolean;
  /**
   * What becomes of a batch's usage metered after its last manifest write (the final deletes, the
   * drain's wind-down): `drop` (the default) leaves it uncounted, so keeping the usage costs no
   * request of its own; `write` makes one more manifest write for it, per batch and per instance
   * that served the batch (exact counts, at about one more Storage transaction per batch warm and
   * three on cold instances).
   */
  leftovers: 'drop' | 'write';
}

/** The setting that chooses PriceSettings.leftovers. */
const LEFTOVERS_SETTING = 'PUSHDRAIN_USAGE_LEFTOVERS';

export function priceSettings(env: Env): PriceSettings {
  const prices = {} as Prices;
  let defaults = true;
  for (const [key, { setting, def }] of Object.entries(PRICE_SETTINGS) as [
    keyof Prices,
    { setting: string; def: number },
  ][]) {
    const raw = env[setting];
    if (raw === undefined || raw.trim() === '') {
      prices[key] = def;
      continue;
    }
    const parsed = price.safeParse(raw);
    if (!parsed.success) throw new ConfigError(setting, parsed.error.issues[0]?.message ?? 'is invalid');
    if (key === 'flexMemoryMb' && parsed.data < 1) throw new ConfigError(setting, `must be at least 1, got "${raw}"`);
    prices[key] = parsed.data;
    defaults &&= parsed.data === def;
  }
  const leftovers = (env[LEFTOVERS_SETTING] ?? '').trim() || 'drop';
  if (leftovers !== 'drop' && leftovers !== 'write')
    throw new ConfigError(LEFTOVERS_SETTING, `must be drop or write, got "${leftovers}"`);
  return { prices, defaults, leftovers };
}
