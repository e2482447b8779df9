/**
 * `npm start` (dist/tools/devstack/start.js with embedded Azurite and the development broker, data in a
 * temporary PUSHDRAIN_DATA_DIR) has its whole process group SIGKILLed right after a `202`, as an
 * OOM kill or a closed terminal does, and is started again at once: the batch is still there,
 * and the broker still holds the WorkDetected event that drives it to a report equal to the
 * independent computation. Also: Azurite itself SIGKILLed keeps every write it answered.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, describe, test } from 'node:test';

import { BlobServiceClient } from '@azure/storage-blob';
import { QueueServiceClient } from '@azure/storage-queue';

import { type HostProcess, startHostProcess } from '../../../test/support/host-process';
import { scratchDir } from '../../../test/support/scratch-dir';
import { generate, toNdjson } from '../../testkit/generate';
import { expectedReport } from '../../testkit/oracle';
import { startAzurite } from '../azurite';

const hosts: HostProcess[] = [];
after(async () => {
  for (const h of hosts) await h.stop();
});

/** Until the process is gone (a zombie awaiting its parent counts as gone: it runs nothing). */
async function gone(pid: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    try {
      process.kill(pid, 0);
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8') === '') return;
    } catch {
      return;
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.fail(`process ${pid} did not die`);
}

interface Batch {
  batchId: string;
  status: string;
  chunks: number;
}

async function waitForEnd(host: HostProcess, batchId: string, timeoutMs: number): Promise<Batch> {
  const deadline = Date.now() + timeoutMs;
  let last: Batch | undefined;
  for (let i = 0; i < 2_000 && Date.now() < deadline; i++) {
    const res = await fetch(`${host.base}/api/batches/${batchId}`);
    assert.equal(res.status, 200, `GET /api/batches/${batchId} after the restart`);
    last = (await res.json()) as Batch;
    if (last.status === 'completed' || last.status === 'failed') return last;
    await new Promise((r) => setTimeout(r, 250));
  }
  return assert.fail(`batch ${batchId} did not finish within ${timeoutMs} ms: ${JSON.stringify(last)}`);
}

describe('npm start killed as a whole', () => {
  test('SIGKILL of the process group right after the 202: the batch survives and completes with the right report', async () => {
    const data = scratchDir('pd-crash-');
    const env = {
      AZURITE_BLOB_PORT: '0',
      AZURITE_QUEUE_PORT: '0',
      SERVICEBUS_PORT: '0',
      PUSHDRAIN_DATA_DIR: data,
      // A message dequeued by the killed process is visible again after this.
      PUSHDRAIN_VISIBILITY_TIMEOUT_SECONDS: '3',
      // Nothing but the WorkDetected event in the broker's journal may drive the batch: the
      // sweep and the watchdog stay out of the test's time window.
      PUSHDRAIN_SWEEP_SCHEDULE: '0 0 0 1 1 *',
      PUSHDRAIN_WATCHDOG_SLA_SECONDS: '3600',
      // 60 chunks, so the kill lands mid-batch even on a loaded machine: a batch of one chunk could
      // finish between the 202 and the kill, and a finished batch leaves nothing in the broker to
      // restore (its watchdog check is cancelled), which is not what this test is about.
      PUSHDRAIN_CHUNK_SIZE: '100',
    };
    const host = await startHostProcess(env, 0, 60_000, { processGroup: true });
    hosts.push(host);
    const txns = generate(6_000, 1010, 80);
    const res = await fetch(`${host.base}/api/batches`, {
      method: 'POST',
      body: toNdjson(txns),
      headers: { 'Content-Type': 'application/x-ndjson' },
    });
    assert.equal(res.status, 202, await res.clone().text());
    const accepted = (await res.json()) as Batch;
    assert.ok(accepted.chunks >= 50, `${accepted.chunks} chunks`);
    await host.kill(); // the whole group: host and broker; Azurite (its own group) is left to save and exit
    const killedAt = Date.now();

    await host.restart();
    const restarted = host.output().slice(host.output().lastIndexOf('servicebus: data in'));
    const restored = /restored (\d+) messages/.exec(restarted);
    assert.ok(
      restored && Number(restored[1]) >= 1,
      `the broker restored the batch's events:\n${restarted.slice(0, 400)}`,
    );
    const found = await fetch(`${host.base}/api/batches/${accepted.batchId}`);
    assert.equal(found.status, 200, 'the acknowledged batch is found, not 404');

    const end = await waitForEnd(host, accepted.batchId, 90_000);
    assert.equal(end.status, 'completed');
    const report = (await (await fetch(`${host.base}/api/batches/${accepted.batchId}/report`)).json()) as {
      transactions: number;
      rows: unknown[];
      totals: unknown[];
    };
    const expected = expectedReport(txns);
    assert.equal(report.transactions, txns.length);
    assert.deepEqual(report.totals, expected.totals, 'a chunk counted twice or lost would show here');
    assert.deepEqual(report.rows, expected.rows);
    console.log(
      `# restart to completed: ${Date.now() - killedAt} ms for ${txns.length} transactions in ${accepted.chunks} chunks`,
    );
  });
});

describe('embedded Azurite killed itself', () => {
  test('every write it answered survives a SIGKILL of Azurite itself', async () => {
    const location = scratchDir('pd-azurite-');
    const first = await startAzurite({ location });
    const blobs = BlobServiceClient.fromConnectionString(first.connectionString).getContainerClient('kept');
    await blobs.create();
    const names = Array.from({ length: 24 }, (_, i) => `b-${i}`);
    await Promise.all(
      names.map((n) => blobs.getBlockBlobClient(n).upload(`body ${n}`, `body ${n}`.length, { metadata: { n } })),
    );
    await Promise.all(names.slice(0, 4).map((n) => blobs.getBlockBlobClient(n).delete()));
    const queue = QueueServiceClient.fromConnectionString(first.connectionString).getQueueClient('kept');
    await queue.create();
    await Promise.all(Array.from({ length: 10 }, (_, i) => queue.sendMessage(`m-${i}`)));
    // SIGKILL at once, well inside Azurite's own 5 s save interval.
    process.kill(first.pid, 'SIGKILL');
    await gone(first.pid);

    const lines: string[] = [];
    const second = await startAzurite({ location, log: (l) => lines.push(l) });
    try {
      const again = BlobServiceClient.fromConnectionString(second.connectionString).getContainerClient('kept');
      const listed: string[] = [];
      for await (const b of again.listBlobsFlat({ includeMetadata: true })) {
        listed.push(b.name);
        assert.equal(b.metadata?.n, b.name);
      }
      assert.deepEqual(listed.sort(), names.slice(4).sort(), 'uploads kept, deletes kept');
      assert.equal((await again.getBlockBlobClient('b-9').downloadToBuffer()).toString(), 'body b-9');
      const q = QueueServiceClient.fromConnectionString(second.connectionString).getQueueClient('kept');
      const peeked = await q.peekMessages({ numberOfMessages: 32 });
      assert.deepEqual(
        peeked.peekedMessageItems.map((m) => m.messageText).sort(),
        Array.from({ length: 10 }, (_, i) => `m-${i}`).sort(),
      );
      assert.deepEqual(lines, [], 'the killed Azurite was gone: its stale pid file made nobody wait');
    } finally {
      await second.stop();
    }
  });

  test('a start on a folder whose Azurite still runs waits for it to exit, and past the wait kills it: nothing answered is lost', async () => {
    const location = scratchDir('pd-azurite-');
    const first = await startAzurite({ location });
    const c = BlobServiceClient.fromConnectionString(first.connectionString).getContainerClient('handover');
    await c.create();
    await c.getBlockBlobClient('last-word').upload('saved', 5);
    const lines: string[] = [];
    const second = await startAzurite({ location, previousExitWaitMs: 1_000, log: (l) => lines.push(l) });
    try {
      assert.equal(lines.length, 2, lines.join('\n'));
      assert.match(lines[0]!, new RegExp(`Waiting for the previous Azurite \\(pid ${first.pid}\\)`));
      assert.match(lines[1]!, /did not exit within 1 s: killing it/);
      assert.throws(() => process.kill(first.pid, 0), 'the previous Azurite is gone');
      const again = BlobServiceClient.fromConnectionString(second.connectionString).getContainerClient('handover');
      assert.equal((await again.getBlockBlobClient('last-word').downloadToBuffer()).toString(), 'saved');
    } finally {
      await second.stop();
      await first.stop();
    }
  });
});
