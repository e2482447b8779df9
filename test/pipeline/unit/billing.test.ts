import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { billChunk, billTransaction, taxOf } from '../../../shared/billing/bill';
import { ReportBuilder, reportCsv } from '../../../shared/billing/report';
import { DEFAULT_TAX_RATES } from '../../../shared/config/tax-rates';
import type { Transaction } from '../../../shared/model/transaction';
import { generate } from '../../../tools/testkit/generate';
import { expectedReport, halfEven } from '../../../tools/testkit/oracle';

describe('tax rounding (half even)', () => {
  test('exact halves go to the even neighbour', () => {
    // 25 × 2000 / 10000 = 5 exactly; 1 × 5000 / 10000 = 0.5 → 0; 3 × 5000/10000 = 1.5 → 2
    assert.equal(taxOf(25, 2000), 5);
    assert.equal(taxOf(1, 5000), 0);
    assert.equal(taxOf(3, 5000), 2);
    assert.equal(taxOf(5, 5000), 2); // 2.5 → 2
    assert.equal(taxOf(7, 5000), 4); // 3.5 → 4
  });
  test('non-halves round to nearest', () => {
    assert.equal(taxOf(1, 1300), 0); // 0.13
    assert.equal(taxOf(4, 1300), 1); // 0.52
    assert.equal(taxOf(999_999_999, 2000), 200_000_000); // 199999999.8
    assert.equal(taxOf(1_000_000_000, 1300), 130_000_000);
  });
  test('agrees with the BigInt oracle over many amounts and rates', () => {
    for (const bp of [0, 1, 999, 1000, 1300, 2000, 3333, 5000, 10_000]) {
      for (let amount = 1; amount <= 20_000; amount += 7) {
        assert.equal(
          taxOf(amount, bp),
          Number(halfEven(BigInt(amount) * BigInt(bp), 10000n)),
          `amount ${amount} bp ${bp}`,
        );
      }
    }
  });
});

describe('billing a chunk and building the report', () => {
  test('refunds are negative in net, tax and total; unknown regions pay no tax', () => {
    const txns: Transaction[] = [
      {
        id: 'a',
        account: 'x',
        timestamp: '2026-01-01T00:00:00Z',
        type: 'charge',
        amount: 1000,
        currency: 'EUR',
        region: 'EU',
      },
      {
        id: 'b',
        account: 'x',
        timestamp: '2026-01-01T00:00:00Z',
        type: 'refund',
        amount: 300,
        currency: 'EUR',
        region: 'EU',
      },
      {
        id: 'c',
        account: 'x',
        timestamp: '2026-01-01T00:00:00Z',
        type: 'charge',
        amount: 500,
        currency: 'EUR',
        region: 'ZZ',
      },
    ];
    const bill = billChunk(txns, DEFAULT_TAX_RATES);
    assert.equal(bill.count, 3);
    assert.deepEqual(
      txns.map((t) => billTransaction(t, DEFAULT_TAX_RATES)).map((l) => [l.net, l.tax, l.total]),
      [
        [1000, 200, 1200],
        [-300, -60, -360],
        [500, 0, 500],
      ],
    );
    assert.deepEqual(bill.partials, [
      { account: 'x', currency: 'EUR', transactions: 3, charges: 1500, refunds: 300, net: 1200, tax: 140, total: 1340 },
    ]);
  });

  test('report from chunk partials equals the independent computation', () => {
    const txns = generate(5000, 7, 50);
    const builder = new ReportBuilder();
    for (let i = 0; i < txns.length; i += 333)
      builder.add(billChunk(txns.slice(i, i + 333), DEFAULT_TAX_RATES).partials);
    const report = builder.build('b-x');
    const expected = expectedReport(txns);
    assert.equal(report.transactions, 5000);
    assert.deepEqual(report.rows, expected.rows);
    assert.deepEqual(report.totals, expected.totals);
  });

  test('CSV has a header and one line per row', () => {
    const builder = new ReportBuilder();
    builder.add(billChunk(generate(50, 3, 5), DEFAULT_TAX_RATES).partials);
    const report = builder.build('b-y');
    const lines = reportCsv(report).trimEnd().split('\r\n');
    assert.equal(lines[0], 'account,currency,transactions,charges,refunds,net,tax,total');
    assert.equal(lines.length, report.rows.length + 1);
    const first = report.rows[0]!;
    assert.equal(
      lines[1],
      [
        first.account,
        first.currency,
        first.transactions,
        first.charges,
        first.refunds,
        first.net,
        first.tax,
        first.total,
      ].join(','),
    );
  });
});
