/** LogBudget: refused requests are logged one line each, up to a number a minute, and what it held back is said. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { LogBudget } from '../../shared/util/log-budget';

describe('LogBudget', () => {
  test('lets `perMinute` lines through, holds the rest back, and counts them on the next line let through', () => {
    let t = 1_000;
    const budget = new LogBudget(2, () => t);
    assert.equal(budget.pass('a'), 'a');
    assert.equal(budget.pass('b'), 'b');
    assert.equal(budget.pass('c'), undefined);
    t += 59_999;
    assert.equal(budget.pass('d'), undefined, 'still the same minute');
    t += 1;
    assert.equal(budget.pass('e'), 'e (2 more like it before this one were not logged)');
    assert.equal(budget.pass('f'), 'f', 'the count is said once');
  });
});
