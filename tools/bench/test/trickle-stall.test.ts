/**
 * A baseline's trickle batch that never completes (the functions-queue stall of some full runs)
 * is left out of the figures and named in the report, instead of ending the bench with no figures.
 * Logic only: the runs are built here; the scenario's own path is the smoke run's.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { trickleFigures } from '../analyze';
import { trickleSection } from '../report';
import type { TrickleRun } from '../scenarios/trickle';

function run(
  design: TrickleRun['design'],
  rep: number,
  storage: number,
  latencyMs: number,
  stalled?: string,
): TrickleRun {
  return {
    design,
    rep,
    batches: 2,
    transactions: 2_000,
    windowMs: 16_000,
    storage: { total: storage },
    afterWindow: 0,
    serviceBusOperations: 0,
    latenciesMs: stalled ? [latencyMs] : [latencyMs, latencyMs],
    ...(stalled ? { stalled } : {}),
  };
}

describe('trickle: a stalled baseline run', () => {
  const runs = [
    run('pushdrain', 0, 20, 500),
    run('pushdrain', 1, 40, 700),
    run(
      'functions-queue',
      0,
      0,
      900,
      'batch 2 of 2: timed out after 120000 ms; its queues then: q-work-1: 1 deep, visible []',
    ),
    run('functions-queue', 1, 80, 1_400),
    run('classic-poller', 0, 100, 1_000),
    run('classic-poller', 1, 100, 1_000),
  ];
  const t = trickleFigures(runs, 8_000);

  test('is left out, and its repetition has no pair in the ratios', () => {
    assert.deepEqual(t.perDesign['functions-queue']?.per1000.runs, [40]);
    // Paired by repetition: pushdrain's repetition 2 (20 per 1,000) against functions-queue's (40),
    // not its repetition 1 (10), which an index-paired ratio would take.
    assert.deepEqual(t.ratio['functions-queue']?.runs, [0.5]);
    assert.deepEqual(t.p50Ratio['functions-queue']?.runs, [0.5]);
    assert.deepEqual(t.ratio['classic-poller']?.runs, [0.2, 0.4]);
  });

  test('is named, with why, in the figures and the report', () => {
    assert.equal(t.stalled?.length, 1);
    assert.match(t.stalled?.[0] ?? '', /^functions-queue, repetition 1: batch 2 of 2: timed out/);
    const md = trickleSection(t);
    assert.match(md, /Left out: a baseline's batch that did not complete in time/);
    assert.match(md, /- functions-queue, repetition 1: batch 2 of 2: timed out after 120000 ms; its queues then/);
  });

  test('a run with no stall says nothing of one', () => {
    const clean = trickleFigures(
      runs.filter((r) => !r.stalled),
      8_000,
    );
    assert.equal(clean.stalled, undefined);
    assert.doesNotMatch(trickleSection(clean), /Left out/);
  });
});
