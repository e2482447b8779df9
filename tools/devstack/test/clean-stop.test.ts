/**
 * A clean Ctrl-C of `npm start` (dist/tools/devstack/start.js, embedded Azurite and the development
 * broker, data in a temporary PUSHDRAIN_DATA_DIR) in the middle of a batch: the drains hand the rest
 * back, and the next start finishes the batch from the broker's events without calling it a repair
 * or saying anything about it. The note a clean stop leaves is for one start on the same storage.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';

import { type HostProcess, startHostProcess } from '../../../test/support/host-process';
import { scratchDir } from '../../../test/support/scratch-dir';
import { generate, toNdjson } from '../../testkit/generate';
import { expectedReport } from '../../testkit/oracle';
import { noteCleanStop, storageIdentity, takeCleanStop } from '../clean-stop';

const hosts: HostProcess[] = [];
after(async () => {
  for (const h of hosts) await h.stop();
});

interface Batch {
  batchId: string;
  status: string;
  chunks: number;
  chunksDone: number;
}

describe('npm start stopped with Ctrl-C mid-batch, then started again', () => {
  test('the handed-back batch completes after the restart, neither repaired nor mentioned by recovery', async () => {
    const data = scratchDir('pd-clean-stop-');
    const host = await startHostProcess({
      AZURITE_BLOB_PORT: '0',
      AZURITE_QUEUE_PORT: '0',
      SERVICEBUS_PORT: '0',
      PUSHDRAIN_DATA_DIR: data,
      PUSHDRAIN_CHUNK_SIZE: '100',
      // Only the handed-back events and start-up recovery may move the batch after the restart.
      PUSHDRAIN_SWEEP_SCHEDULE: '0 0 0 1 1 *',
      PUSHDRAIN_WATCHDOG_SLA_SECONDS: '3600',
    });
    hosts.push(host);
    const txns = generate(20_000, 3950, 200);
    const res = await fetch(`${host.base}/api/batches`, {
      method: 'POST',
      body: toNdjson(txns),
      headers: { 'Content-Type': 'application/x-ndjson' },
    });
    assert.equal(res.status, 202, await res.clone().text());
    const { batchId, chunks } = (await res.json()) as Batch;
    assert.ok(chunks >= 150, `${chunks} chunks: more than the drains take in one go`);
    assert.equal(await host.stop(60_000), 0, `a clean stop:\n${host.output().slice(-2000)}`);
    const first = host.output();
    assert.match(first, /Stopped cleanly/);
    assert.doesNotMatch(first, new RegExp(`batch ${batchId} completed`), 'the stop came in the middle of the batch');

    await host.restart();
    const deadline = Date.now() + 120_000;
    let b: Batch | undefined;
    for (let i = 0; i < 1_000 && Date.now() < deadline; i++) {
      b = (await (await fetch(`${host.base}/api/batches/${batchId}`)).json()) as Batch;
      if (b.status === 'completed' || b.status === 'failed') break;
      await new Promise((r) => setTimeout(r, 250));
    }
    assert.equal(b?.status, 'completed', host.output().slice(-3000));
    const report = (await (await fetch(`${host.base}/api/batches/${batchId}/report`)).json()) as { totals: unknown };
    assert.deepEqual(report.totals, expectedReport(txns).totals, 'nothing lost, nothing counted twice');
    // The log line follows the terminal write that the status read saw: wait for it, boundedly.
    const completedLine = new RegExp(`batch ${batchId} completed`);
    for (let i = 0; i < 200 && !completedLine.test(host.output().slice(first.length)); i++)
      await new Promise((r) => setTimeout(r, 50));
    const second = host.output().slice(first.length);
    assert.match(second, completedLine, 'finished by the second start');
    assert.doesNotMatch(second, /left open by a stopped process|re-enqueued \d+ lost pointers|^Recovery:/m, second);
  });
});

describe('the clean-stop note', () => {
  test('is for one start on the same storage: another storage, a second start or no note recover as after a crash', async () => {
    const dir = scratchDir('pd-clean-note-');
    const here = storageIdentity({ PUSHDRAIN_NAME_PREFIX: 'a' }, true);
    assert.equal(takeCleanStop(dir, here), false, 'no note: a first start or a crash');
    await noteCleanStop(dir, here);
    assert.equal(takeCleanStop(dir, here), true);
    assert.equal(takeCleanStop(dir, here), false, 'consumed by the start that read it');
    await noteCleanStop(dir, here);
    assert.equal(takeCleanStop(dir, storageIdentity({ PUSHDRAIN_NAME_PREFIX: 'b' }, true)), false);
    assert.equal(existsSync(join(dir, '.pushdrain-clean-stop.json')), false, 'removed even when not ours');
    const cloud = storageIdentity({ StorageConnection: 'AccountName=x;AccountKey=c2VjcmV0' }, false);
    assert.match(cloud, /^sha256:[0-9a-f]{64}$/, 'no connection string (nor its key) in the note');
    writeFileSync(join(dir, '.pushdrain-clean-stop.json'), 'not json');
    assert.equal(takeCleanStop(dir, here), false, 'an unreadable note counts as none');
  });

  test('instances of a fleet share the data folder: notes written at the same moment all succeed, no temporary file left', async () => {
    const dir = scratchDir('pd-clean-fleet-');
    const here = storageIdentity({}, true);
    const results = await Promise.allSettled(Array.from({ length: 8 }, () => noteCleanStop(dir, here)));
    assert.deepEqual(
      results.filter((r) => r.status === 'rejected').map((r) => String(r.reason)),
      [],
    );
    assert.deepEqual(readdirSync(dir), ['.pushdrain-clean-stop.json']);
    assert.equal(takeCleanStop(dir, here), true);
  });
});
