/**
 * The table of allowed batch state changes: every pair of states is allowed exactly when the
 * table lists it, and the manifest store (on Azurite) refuses any other change with a clear
 * error, writing nothing.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import {
  type BatchState,
  checkStateChange,
  isAllowedChange,
  isTerminal,
  STATE_CHANGES,
} from '../../shared/batch/batch-state';
import type { Manifest } from '../../shared/batch/manifest';
import { PermanentError } from '../../shared/errors';
import { testRuntime, useStorage } from '../support/storage';

const STATES: BatchState[] = ['ingesting', 'accepted', 'completed', 'failed', 'abandoned'];

function manifest(batchId: string, state: BatchState): Manifest {
  return {
    v: 1,
    batchId,
    state,
    source: 'http',
    bodySha256: 'x',
    submittedAt: new Date(0).toISOString(),
    transactions: 1,
    chunkSize: 1,
    chunks: 1,
    queues: [],
    notification: 'sent',
    done: [],
    failed: [],
  };
}

describe('batch state changes (the table)', () => {
  test('a change is allowed exactly when the table lists it (or stays put)', () => {
    const allowed: string[] = [];
    for (const from of STATES)
      for (const to of STATES) {
        const listed = from === to || STATE_CHANGES[from][to] !== undefined;
        assert.equal(isAllowedChange(from, to), listed, `${from} → ${to}`);
        if (listed) assert.doesNotThrow(() => checkStateChange('b', from, to));
        else assert.throws(() => checkStateChange('b', from, to), PermanentError);
        if (from !== to && listed) allowed.push(`${from}→${to}`);
      }
    // The whole life of a batch, written out once more so that a change to the table is a change here too.
    assert.deepEqual(allowed.sort(), [
      'abandoned→ingesting',
      'accepted→completed',
      'accepted→failed',
      'failed→accepted',
      'ingesting→abandoned',
      'ingesting→accepted',
    ]);
  });

  test('terminal is completed and failed; redrive is the one way out of one', () => {
    assert.deepEqual(
      STATES.filter((s) => isTerminal({ state: s })),
      ['completed', 'failed'],
    );
    const outOfTerminal = STATES.filter((s) => isTerminal({ state: s })).flatMap((from) =>
      Object.entries(STATE_CHANGES[from]).map(([to, by]) => `${from}→${to}: ${by}`),
    );
    assert.equal(outOfTerminal.length, 1);
    assert.match(outOfTerminal[0] ?? '', /^failed→accepted: redrive/);
  });

  test('the error names the batch, the change, and what is allowed', () => {
    assert.throws(
      () => checkStateChange('b-7', 'completed', 'accepted'),
      (e: Error) =>
        e.message === 'batch b-7: completed → accepted is not an allowed state change (from completed: none)',
    );
    assert.throws(
      () => checkStateChange('b-8', 'ingesting', 'completed'),
      (e: Error) => /ingesting → completed .* \(from ingesting: accepted, abandoned\)$/.test(e.message),
    );
  });
});

describe('batch state changes (the manifest store, on Azurite)', () => {
  useStorage();

  test('an illegal change is refused and writes nothing; a listed one is written', async () => {
    const { parts } = await testRuntime();
    const store = parts.manifests;
    const id = 'state-table-1';
    const etag = await store.create(manifest(id, 'ingesting'));
    assert.ok(etag);
    const before = await store.read(id);
    assert.ok(before);
    // Twice: once on the version this process knows (the fast path), once after a fresh read.
    for (let i = 0; i < 2; i++) {
      await assert.rejects(
        store.update(id, (m) => ({ ...m, state: 'completed' })),
        (e: Error) => e instanceof PermanentError && /ingesting → completed is not an allowed/.test(e.message),
      );
      const after = await store.read(id);
      assert.equal(after?.etag, before.etag, 'nothing was written');
      assert.equal(after?.manifest.state, 'ingesting');
    }
    await assert.rejects(store.replace({ ...before.manifest, state: 'failed' }, before), PermanentError);
    assert.equal((await store.read(id))?.etag, before.etag);
    const accepted = await store.update(id, (m) => ({ ...m, state: 'accepted' }));
    assert.equal(accepted?.manifest.state, 'accepted');
    assert.equal((await store.read(id))?.manifest.state, 'accepted');
  });
});
