/** MemoryBudget: room, order, a reservation bigger than the budget, and what health shows. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { MemoryBudget } from '../../../shared/util/memory-budget';

/** Settles every pending promise callback queued so far. */
const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('MemoryBudget', () => {
  test('grants what fits at once and holds the rest until released, in order', async () => {
    const budget = new MemoryBudget(100);
    const a = await budget.reserve(60);
    const granted: string[] = [];
    const b = budget.reserve(50).then((release) => (granted.push('b'), release));
    const c = budget.reserve(10).then((release) => (granted.push('c'), release));
    await turn();
    // c would fit beside a, but b asked first: nobody passes a waiter.
    assert.deepEqual(granted, []);
    assert.equal(budget.snapshot().waits, 2);
    a();
    const [releaseB, releaseC] = await Promise.all([b, c]);
    assert.deepEqual(granted, ['b', 'c']);
    assert.deepEqual(budget.snapshot(), { limitBytes: 100, inUseBytes: 60, peakBytes: 60, waits: 2, refused: 0 });
    releaseB();
    releaseB(); // a second release gives nothing back twice
    releaseC();
    assert.equal(budget.snapshot().inUseBytes, 0);
  });

  test('a reservation bigger than the whole budget runs alone rather than never', async () => {
    const budget = new MemoryBudget(100);
    const small = await budget.reserve(10);
    const granted: (() => void)[] = [];
    void budget.reserve(500).then((release) => granted.push(release));
    await turn();
    assert.equal(granted.length, 0, 'not beside another');
    small();
    await turn();
    assert.equal(granted.length, 1, 'alone, it runs');
    assert.equal(budget.snapshot().peakBytes, 500);
    granted[0]?.();
    assert.equal(budget.snapshot().inUseBytes, 0);
  });

  test('a part holds room in the whole too, and cannot take more than its own limit', async () => {
    const whole = new MemoryBudget(100);
    const part = whole.part(30);
    assert.equal(part.limitBytes, 30);
    assert.equal(whole.part(500).limitBytes, 100, 'never more than the whole');
    const a = await part.reserve(20);
    assert.equal(whole.snapshot().inUseBytes, 20, 'held in the whole as well');
    const granted: string[] = [];
    const b = part.reserve(20).then((release) => (granted.push('b'), release));
    await turn();
    // The whole has room for b; its part does not.
    assert.deepEqual(granted, []);
    assert.equal(whole.snapshot().waits, 1, 'a wait in a part is shown in the whole');
    // Other work in the whole (an ingest) is not held up by the part's waiter.
    const ingest = whole.tryReserve(75);
    assert.ok(ingest, 'the whole still admits beside a waiting part');
    a();
    const releaseB = await b;
    assert.deepEqual(granted, ['b']);
    assert.equal(whole.snapshot().inUseBytes, 95);
    // Room in the part, none in the whole: a try takes nothing from either.
    assert.equal(part.tryReserve(10), undefined);
    assert.equal(part.snapshot().inUseBytes, 20);
    assert.equal(whole.snapshot().inUseBytes, 95);
    releaseB();
    ingest();
    assert.equal(whole.snapshot().inUseBytes, 0);
    assert.equal(part.snapshot().inUseBytes, 0);
  });

  test('a quarter of the instance memory named, and a refusal of nothing', () => {
    assert.equal(MemoryBudget.forInstance(512).snapshot().limitBytes, 128 * 1024 * 1024);
    assert.ok(MemoryBudget.forInstance(0).snapshot().limitBytes > 0, 'from the process or the machine');
    assert.throws(() => new MemoryBudget(0), /must be positive/);
  });
});
