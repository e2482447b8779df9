/**
 * The reduce step's output: merge chunk partials into report rows and per-currency totals.
 * Rows are keyed by (account, currency), so merging is order-independent.
 */
import type { Submitter } from '../auth/principal';
import type { BatchCost } from '../cost/batch-cost';
import { addSums, compareText, type ReportRow, sortRows, type TotalsRow, zeroSums } from './bill';

export interface Report {
  batchId: string;
  /** Who submitted the batch (token callers only). */
  submitter?: Submitter;
  transactions: number;
  rows: ReportRow[];
  totals: TotalsRow[];
  /**
   * What the batch had used when its report was first written (`asOf`), priced: the report is
   * hashed and signed then, so it cannot wait for the last writes. The status shows the final figure.
   */
  cost?: BatchCost & { asOf: string };
}

export class ReportBuilder {
  /** account → currency → row (as billChunk keys them): no key string built per partial row. */
  private readonly byAccount = new Map<string, Map<string, ReportRow>>();
  private readonly rows: ReportRow[] = [];

  add(partials: readonly ReportRow[]): void {
    for (const p of partials) {
      let byCurrency = this.byAccount.get(p.account);
      if (!byCurrency) {
        byCurrency = new Map();
        this.byAccount.set(p.account, byCurrency);
      }
      let row = byCurrency.get(p.currency);
      if (!row) {
        row = { account: p.account, currency: p.currency, ...zeroSums() };
        byCurrency.set(p.currency, row);
        this.rows.push(row);
      }
      addSums(row, p);
    }
  }

  build(batchId: string): Report {
    const rows = sortRows([...this.rows]);
    const totals = new Map<string, TotalsRow>();
    let transactions = 0;
    for (const r of rows) {
      transactions += r.transactions;
      let t = totals.get(r.currency);
      if (!t) {
        t = { currency: r.currency, ...zeroSums() };
        totals.set(r.currency, t);
      }
      addSums(t, r);
    }
    return {
      batchId,
      transactions,
      rows,
      totals: [...totals.values()].sort((a, b) => compareText(a.currency, b.currency)),
    };
  }
}

const CSV_COLUMNS = ['account', 'currency', 'transactions', 'charges', 'refunds', 'net', 'tax', 'total'] as const;

/**
 * RFC 4180 CSV of the rows. Account ids cannot hold commas or quotes, but quote defensively. A text
 * cell a spreadsheet would take for a formula (`=`, `+`, `-`, `@`, tab or CR first: OWASP's list)
 * gets a leading `'`, so opening the report runs nothing; numbers stay numbers, negative ones too.
 */
export function reportCsv(report: Report): string {
  const cell = (v: string | number): string => {
    const s = typeof v === 'string' && /^[=+\-@\t\r]/.test(v) ? `'${v}` : String(v);
    return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  const lines = [CSV_COLUMNS.join(',')];
  for (const r of report.rows) lines.push(CSV_COLUMNS.map((c) => cell(r[c])).join(','));
  return lines.join('\r\n') + '\r\n';
}
