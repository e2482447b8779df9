/**
 * The finalizer's checks (shared/billing/control-check.ts) figure by figure, and the rules for what
 * was written before: a chunk result without inputs (header v1 or v2) leaves the inputs check out
 * but not the report's, and a manifest without control totals is checked on its count.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { billChunk } from '../../../shared/billing/bill';
import { checkInputs, checkReport, keptMismatches } from '../../../shared/billing/control-check';
import { ReportBuilder } from '../../../shared/billing/report';
import { DEFAULT_TAX_RATES } from '../../../shared/config/tax-rates';
import { controlSumsOf } from '../../../shared/model/control-totals';
import { generate } from '../../../tools/testkit/generate';

const txns = generate(1_000, 7, 30);
const parts = [txns.slice(0, 400), txns.slice(400, 800), txns.slice(800)];
const expected = { transactions: 1_000, controls: controlSumsOf(txns) };

function reportOf(chunks: (typeof txns)[]): ReturnType<ReportBuilder['build']> {
  const b = new ReportBuilder();
  for (const c of chunks) b.add(billChunk(c, DEFAULT_TAX_RATES).partials);
  return b.build('b-1');
}

describe('control checks', () => {
  test('chunks that hold what was sent, and their report, pass every check', () => {
    const chunks = parts.map((p) => ({ count: p.length, inputs: controlSumsOf(p) }));
    assert.deepEqual(checkInputs(expected, chunks), []);
    assert.deepEqual(checkReport(expected, reportOf(parts)), []);
  });

  test('the control sums of the parts add up to those of the whole, whatever the cut', () => {
    const sums = new Map<string, number>();
    for (const p of parts)
      for (const s of controlSumsOf(p))
        sums.set(`${s.currency}/${s.type}`, (sums.get(`${s.currency}/${s.type}`) ?? 0) + s.amount);
    for (const s of expected.controls) assert.equal(sums.get(`${s.currency}/${s.type}`), s.amount);
  });

  test('a chunk short of one transaction is named by its count and its sums', () => {
    const short = [parts[0]!, parts[1]!, parts[2]!.slice(1)];
    const gone = parts[2]![0]!;
    const chunks = short.map((p) => ({ count: p.length, inputs: controlSumsOf(p) }));
    const figures = checkInputs(expected, chunks);
    const before = expected.controls.find((s) => s.currency === gone.currency && s.type === gone.type)!;
    assert.deepEqual(figures, [
      { check: 'inputs', figure: 'transactions', expected: 1_000, actual: 999 },
      {
        check: 'inputs',
        figure: `${gone.currency} ${gone.type} count`,
        expected: before.count,
        actual: before.count - 1,
      },
      {
        check: 'inputs',
        figure: `${gone.currency} ${gone.type} amount`,
        expected: before.amount,
        actual: before.amount - gone.amount,
      },
    ]);
  });

  test("a report whose rows do not add up to its totals is named by the rows' figures", () => {
    const report = reportOf(parts);
    report.rows[0]!.tax += 1;
    const figures = checkReport(expected, report);
    const cur = report.rows[0]!.currency;
    const total = report.totals.find((t) => t.currency === cur)!.tax;
    assert.deepEqual(figures, [{ check: 'rows', figure: `${cur} tax`, expected: total, actual: total + 1 }]);
  });

  test('results without inputs (header v1, v2) leave the inputs check out; the report is still held to the totals', () => {
    const old = parts.map((p) => ({ count: p.length }));
    assert.deepEqual(checkInputs(expected, old), []);
    // A sum the old results got wrong still shows, in the report's totals.
    const report = reportOf(parts);
    const t = report.totals[0]!;
    t.refunds += 5;
    for (const r of report.rows)
      if (r.currency === t.currency) {
        r.refunds += 5;
        break;
      }
    const figures = checkReport(expected, report);
    assert.deepEqual(figures, [
      { check: 'report', figure: `${t.currency} refunds`, expected: t.refunds - 5, actual: t.refunds },
    ]);
    // Their count is checked whatever their version.
    assert.deepEqual(checkInputs(expected, old.slice(1)), [
      { check: 'inputs', figure: 'transactions', expected: 1_000, actual: 1_000 - parts[0]!.length },
    ]);
  });

  test('a batch accepted before control totals were kept is checked on its count and its rows', () => {
    const count = { transactions: 1_000 };
    assert.deepEqual(
      checkInputs(
        count,
        parts.map((p) => ({ count: p.length, inputs: [] })),
      ),
      [],
    );
    assert.deepEqual(checkReport(count, reportOf(parts)), []);
    assert.deepEqual(checkReport(count, reportOf(parts.slice(1))), [
      { check: 'report', figure: 'transactions', expected: 1_000, actual: 1_000 - parts[0]!.length },
    ]);
  });

  test('the figures kept are the first of each check, at most 8 each', () => {
    const many = Array.from({ length: 30 }, (_, i) => ({
      check: (['inputs', 'report', 'rows'] as const)[i % 3]!,
      figure: `f${i}`,
      expected: i,
      actual: i + 1,
    }));
    const kept = keptMismatches(many);
    assert.equal(kept.length, 24);
    for (const check of ['inputs', 'report', 'rows']) assert.equal(kept.filter((m) => m.check === check).length, 8);
    assert.deepEqual(kept[0], many[0]);
  });
});
