/**
 * The transaction schema (docs/ARCHITECTURE.md, "Transaction (input)"): the type every step
 * passes around, and the limits the contract fixes. Its rules are in validate-transaction.ts,
 * its text in chunk blobs in canonical-line.ts.
 */

export type TransactionType = 'charge' | 'refund';

export interface Transaction {
  id: string;
  account: string;
  timestamp: string;
  type: TransactionType;
  amount: number;
  currency: string;
  region?: string;
}

export const MAX_AMOUNT = 1_000_000_000;
export const MAX_TRANSACTIONS = 1_000_000;
