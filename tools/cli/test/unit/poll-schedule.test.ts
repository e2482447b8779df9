/** The wait between two looks of `submit` at its batch: exact values of the pure rule. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { MAX_WAIT_MS, nextPollMs } from '../../poll-schedule';

describe('nextPollMs', () => {
  test('the shortest wait while the batch is young and changing', () => {
    assert.equal(nextPollMs({ minMs: 500, elapsedMs: 0, unchanged: 0 }), 500);
    assert.equal(nextPollMs({ minMs: 500, elapsedMs: 4_000, unchanged: 0 }), 500);
  });

  test('a tenth of the batch’s age once that is longer, up to the cap', () => {
    assert.equal(nextPollMs({ minMs: 500, elapsedMs: 20_000, unchanged: 0 }), 2_000);
    assert.equal(nextPollMs({ minMs: 500, elapsedMs: 600_000, unchanged: 0 }), MAX_WAIT_MS);
  });

  test('half again for each unchanged answer in a row, never above the cap', () => {
    assert.equal(nextPollMs({ minMs: 500, elapsedMs: 1_000, unchanged: 1 }), 750);
    assert.equal(nextPollMs({ minMs: 500, elapsedMs: 1_000, unchanged: 3 }), 1_688);
    assert.equal(nextPollMs({ minMs: 500, elapsedMs: 20_000, unchanged: 2 }), 4_500);
    assert.equal(nextPollMs({ minMs: 500, elapsedMs: 1_000, unchanged: 50 }), MAX_WAIT_MS);
  });

  test('a --poll above the cap is honoured as given', () => {
    assert.equal(nextPollMs({ minMs: 8_000, elapsedMs: 0, unchanged: 3 }), 8_000);
  });
});
