/**
 * The finalizer's checks, before a batch may be marked completed: the chunks' inputs add up
 * exactly to the control totals ingest counted, the report's totals agree with them, and the
 * report's rows add up to its totals. Any figure that differs fails the batch closed
 * (`control_totals_mismatch`): a report that does not reconcile is never published.
 *
 * A batch accepted before control totals were kept (no `controls` on its manifest) is checked
 * on its transaction count; a chunk result written before results carried their inputs (result
 * header v1 or v2) leaves out the inputs check, and the report's totals (transactions, charges and
 * refunds per currency: what an old result's rows give) are still checked against the control totals.
 */
import type { ControlSum } from '../model/control-totals';
import type { TotalsRow } from './bill';
import type { Report } from './report';

export const CONTROL_TOTALS_MISMATCH = 'control_totals_mismatch';

/** Figures kept at most per check (24 in all): the first ones of each name the fault, and the manifest and event stay small. */
const MAX_MISMATCHES_PER_CHECK = 8;

export interface ControlMismatch {
  /**
   * `inputs`: the chunks' inputs against the control totals; `report`: the report's totals against
   * the control totals; `rows`: the report's rows against its own totals.
   */
  check: 'inputs' | 'report' | 'rows';
  /** `transactions`, or `{currency} {type} count|amount` (inputs), `{currency} {field}` (report, rows). */
  figure: string;
  expected: number;
  actual: number;
}

type Figures = Map<string, number>;

function compare(check: ControlMismatch['check'], expected: Figures, actual: Figures): ControlMismatch[] {
  const out: ControlMismatch[] = [];
  for (const figure of new Set([...expected.keys(), ...actual.keys()])) {
    const e = expected.get(figure) ?? 0;
    const a = actual.get(figure) ?? 0;
    if (e !== a) out.push({ check, figure, expected: e, actual: a });
  }
  return out;
}

function sumFigures(sums: readonly ControlSum[]): Figures {
  const f: Figures = new Map();
  for (const s of sums) {
    f.set(`${s.currency} ${s.type} count`, s.count);
    f.set(`${s.currency} ${s.type} amount`, s.amount);
  }
  return f;
}

/** What a chunk result tells of its input: how many transactions, and their sums when it carries them. */
export interface ChunkInputs {
  count: number;
  inputs?: ControlSum[];
}

export interface ControlExpectation {
  transactions: number;
  controls?: ControlSum[];
}

/** The chunks' inputs, added up, against the control totals. */
export function checkInputs(expected: ControlExpectation, chunks: readonly ChunkInputs[]): ControlMismatch[] {
  const counted = chunks.reduce((n, c) => n + c.count, 0);
  const out = compare(
    'inputs',
    new Map([['transactions', expected.transactions]]),
    new Map([['transactions', counted]]),
  );
  if (!expected.controls || chunks.some((c) => c.inputs === undefined)) return out;
  const added: Figures = new Map();
  for (const c of chunks)
    for (const [figure, v] of sumFigures(c.inputs ?? [])) added.set(figure, (added.get(figure) ?? 0) + v);
  return [...out, ...compare('inputs', sumFigures(expected.controls), added)];
}

/** The report's totals against the control totals, and its rows against its totals. */
export function checkReport(expected: ControlExpectation, report: Report): ControlMismatch[] {
  const out = compare(
    'report',
    new Map([['transactions', expected.transactions]]),
    new Map([['transactions', report.transactions]]),
  );
  if (expected.controls) {
    const want: Figures = new Map();
    for (const s of expected.controls) {
      const add = (field: string, v: number): void =>
        void want.set(`${s.currency} ${field}`, (want.get(`${s.currency} ${field}`) ?? 0) + v);
      add('transactions', s.count);
      add(s.type === 'charge' ? 'charges' : 'refunds', s.amount);
    }
    const got: Figures = new Map();
    for (const t of report.totals) {
      got.set(`${t.currency} transactions`, t.transactions);
      got.set(`${t.currency} charges`, t.charges);
      got.set(`${t.currency} refunds`, t.refunds);
    }
    // A currency with no refunds has a `refunds` of 0 in the report and no refund sum in the controls.
    for (const [figure, v] of got) if (v === 0 && !want.has(figure)) got.delete(figure);
    out.push(...compare('report', want, got));
  }
  return [...out, ...checkRows(report)];
}

const FIELDS = ['transactions', 'charges', 'refunds', 'net', 'tax', 'total'] as const;

/** Summed per currency first, then named: a batch's report has one row per (account, currency). */
function totalsFigures(rows: readonly TotalsRow[]): Figures {
  const byCurrency = new Map<string, number[]>();
  for (const r of rows) {
    let sums = byCurrency.get(r.currency);
    if (!sums) byCurrency.set(r.currency, (sums = FIELDS.map(() => 0)));
    for (let i = 0; i < FIELDS.length; i++) sums[i]! += r[FIELDS[i]!];
  }
  const f: Figures = new Map();
  for (const [currency, sums] of byCurrency)
    for (let i = 0; i < FIELDS.length; i++) f.set(`${currency} ${FIELDS[i]!}`, sums[i]!);
  return f;
}

function checkRows(report: Report): ControlMismatch[] {
  const rowsTransactions = report.rows.reduce((n, r) => n + r.transactions, 0);
  return [
    ...compare('rows', new Map([['transactions', report.transactions]]), new Map([['transactions', rowsTransactions]])),
    ...compare('rows', totalsFigures(report.totals), totalsFigures(report.rows)),
  ];
}

/** The figures a batch keeps: the first of each check, `transactions` first. */
export function keptMismatches(mismatches: readonly ControlMismatch[]): ControlMismatch[] {
  const seen = new Map<ControlMismatch['check'], number>();
  return mismatches.filter((m) => {
    const n = (seen.get(m.check) ?? 0) + 1;
    seen.set(m.check, n);
    return n <= MAX_MISMATCHES_PER_CHECK;
  });
}

/** The batch's `error` for a mismatch: the reason, then the first figures. */
export function mismatchError(mismatches: readonly ControlMismatch[]): string {
  const shown = mismatches
    .slice(0, 5)
    .map((m) => `${m.check} ${m.figure}: expected ${m.expected}, got ${m.actual}`)
    .join('; ');
  return `${CONTROL_TOTALS_MISMATCH}: ${shown}`;
}
