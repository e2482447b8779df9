/** Every back-off of the app, checked exactly: `random` is injected, nothing sleeps. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { backoffDelay, conflictDelay, doublingDelay } from '../../../shared/retry/backoff';

describe('back-off formula', () => {
  test('min + (2^idle − 1) × U(80,120), capped at max', () => {
    assert.equal(
      backoffDelay(0, 100, 5000, () => 0.5),
      100,
    );
    assert.equal(
      backoffDelay(1, 100, 5000, () => 0),
      180,
    ); // 100 + 1 × 80
    assert.equal(
      backoffDelay(2, 100, 5000, () => 1),
      460,
    ); // 100 + 3 × 120
    assert.equal(
      backoffDelay(3, 100, 5000, () => 0.5),
      800,
    ); // 100 + 7 × 100
    assert.equal(
      backoffDelay(10, 100, 5000, () => 0.5),
      5000,
    );
  });

  test('doubling: min(first × 2^min(attempt, max doublings), cap) × U(½, 1)', () => {
    const b = { firstMs: 1000, maxDoublings: 5, maxMs: 20_000 };
    assert.equal(
      doublingDelay(0, b, () => 0),
      500,
    );
    assert.equal(
      doublingDelay(0, b, () => 1),
      1000,
    );
    assert.equal(
      doublingDelay(2, b, () => 0.5),
      3000,
    ); // 4000 × 0.75
    assert.equal(
      doublingDelay(-3, b, () => 1),
      1000,
      'a negative attempt counts as 0',
    );
    assert.equal(
      doublingDelay(4, b, () => 1),
      16_000,
    );
    assert.equal(
      doublingDelay(5, b, () => 1),
      20_000,
      'capped before the jitter',
    );
    assert.equal(
      doublingDelay(50, { ...b, maxMs: 1e9 }, () => 1),
      32_000,
      'at most maxDoublings',
    );
  });

  test('conflict: U(0, step × (attempt + 1)), whole ms', () => {
    assert.equal(
      conflictDelay(0, 20, () => 0),
      0,
    );
    assert.equal(
      conflictDelay(0, 20, () => 0.999),
      19,
    );
    assert.equal(
      conflictDelay(2, 20, () => 0.5),
      30,
    );
  });
});
