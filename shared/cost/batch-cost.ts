/**
 * A batch's usage as clients see it, with its estimated cost at the configured list prices
 * (config/price-settings.ts). Execution time is billed by Flex Consumption as instance memory ×
 * the time executions run; the batch's CPU time stands for that time (an instance busy with the
 * batch), so the estimate is a floor for time spent waiting on Storage. The instance-hours of the
 * Service Bus base charge and of always-ready instances belong to no batch and are left out.
 */
import { PRICE_SHEET_DATE, type Prices, type PriceSettings } from '../config/price-settings';
import { type BatchUsage, type CostStage, storageTotal } from './batch-usage';

export interface BatchCost {
  storageTransactions: number;
  /** By operation, as the meter names them. */
  storageByOperation: Record<string, number>;
  serviceBusOperations: number;
  cpuMs: Record<CostStage, number>;
  /** Whether usage after the batch's last manifest write is counted (PUSHDRAIN_USAGE_LEFTOVERS=write). */
  leftoversCounted: boolean;
  estimate: CostEstimate;
}

interface CostEstimate {
  currency: 'USD';
  perBatch: number;
  per1000Transactions: number;
  /** The published sheet's date when every price is its default; absent with prices of your own. */
  pricesAsOf?: string;
  byService: { functions: number; storage: number; serviceBus: number };
}

/** Blob operations billed as writes in a general-purpose v2 account; other blob operations are reads (deletes are free). */
const BLOB_WRITES = new Set([
  'blob.put',
  'blob.putBlock',
  'blob.putBlockList',
  'blob.copy',
  'blob.lease',
  'blob.list',
  'blob.metadata',
  'container.create',
]);
const FREE = new Set(['blob.delete', 'container.delete']);

/**
 * Flex Consumption executions: one per ingest request and one per Service Bus event a trigger ran
 * for; the batch's received events are half its Service Bus operations (a receive and a settle each).
 */
function executions(u: BatchUsage): number {
  return 1 + Math.floor(u.serviceBus / 2);
}

function storageCost(storage: Record<string, number>, p: Prices): number {
  let usd = 0;
  for (const [op, n] of Object.entries(storage)) {
    if (FREE.has(op)) continue;
    const per10k = op.startsWith('queue.') ? p.queue10k : BLOB_WRITES.has(op) ? p.blobWrite10k : p.blobRead10k;
    usd += (n * per10k) / 10_000;
  }
  return usd;
}

export function batchCost(u: BatchUsage, transactions: number, priced: PriceSettings): BatchCost {
  const p = priced.prices;
  const cpuSeconds = (u.cpuMs.ingest + u.cpuMs.map + u.cpuMs.reduce) / 1000;
  const functions =
    cpuSeconds * (p.flexMemoryMb / 1024) * p.flexGbSecond + (executions(u) * p.flexMillionExecutions) / 1e6;
  const storage = storageCost(u.storage, p);
  const serviceBus = (u.serviceBus * p.serviceBusMillionOperations) / 1e6;
  const perBatch = functions + storage + serviceBus;
  return {
    storageTransactions: storageTotal(u),
    storageByOperation: u.storage,
    serviceBusOperations: u.serviceBus,
    cpuMs: u.cpuMs,
    leftoversCounted: priced.leftovers === 'write',
    estimate: {
      currency: 'USD',
      perBatch: usd(perBatch),
      per1000Transactions: usd(transactions > 0 ? (perBatch * 1000) / transactions : 0),
      ...(priced.defaults ? { pricesAsOf: PRICE_SHEET_DATE } : {}),
      byService: { functions: usd(functions), storage: usd(storage), serviceBus: usd(serviceBus) },
    },
  };
}

/** To a millionth of a cent: the figures are tiny and a float's tail is noise. */
function usd(x: number): number {
  return Math.round(x * 1e8) / 1e8;
}
