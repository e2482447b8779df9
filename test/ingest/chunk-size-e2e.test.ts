/**
 * The chunk size rule end to end, as `npm start` runs it: Azurite, the development broker and
 * the local host as a child process, with the default settings (PUSHDRAIN_CHUNK_SIZE 20,000 as
 * the cap). A big batch is cut into fewer, bigger chunks of several gzip members and a small one
 * into one chunk as before; both go in over HTTP, and both reports equal an independent computation.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';

import { BlobServiceClient } from '@azure/storage-blob';

import { layout } from '../../shared/layout';
import { entityNames } from '../../shared/names';
import { type Azurite, startAzurite } from '../../tools/devstack/azurite';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { expectedReport } from '../../tools/testkit/oracle';
import { type BrokerHarness, startTestBroker } from '../support/broker';
import { type HostProcess, startHostProcess } from '../support/host-process';
import { uniquePrefix } from '../support/storage';

const PREFIX = uniquePrefix();
const names = entityNames(PREFIX, 4);
let azurite: Azurite;
let bus: BrokerHarness;
let host: HostProcess;

before(async () => {
  [azurite, bus] = await Promise.all([startAzurite(), startTestBroker()]);
  host = await startHostProcess({
    StorageConnection: azurite.connectionString,
    ServiceBusConnection: bus.broker.connectionString,
    PUSHDRAIN_NAME_PREFIX: PREFIX,
    PUSHDRAIN_SWEEP_SCHEDULE: '0 0 0 1 1 *',
  });
});

after(async () => {
  if (host) assert.equal(await host.stop(), 0, host.output().slice(-2000));
  await bus?.close();
  await azurite?.stop();
});

async function submit(body: Buffer, gzip: boolean): Promise<{ batchId: string; chunks: number }> {
  const res = await fetch(`${host.base}/api/batches`, {
    method: 'POST',
    body: gzip ? gzipSync(body) : body,
    headers: {
      'Content-Type': 'application/x-ndjson',
      ...(gzip ? { 'Content-Encoding': 'gzip' } : {}),
      'x-functions-key': 'any-key-works-locally',
    },
  });
  assert.equal(res.status, 202, await res.clone().text());
  return (await res.json()) as { batchId: string; chunks: number };
}

/** Transactions per chunk blob, from the metadata ingest wrote on each. */
async function chunkCounts(batchId: string, chunks: number): Promise<number[]> {
  const work = BlobServiceClient.fromConnectionString(azurite.connectionString).getContainerClient(
    names.container('work'),
  );
  const out: number[] = [];
  for (let i = 0; i < chunks; i++) {
    const props = await work.getBlobClient(layout.chunk(batchId, i).name).getProperties();
    out.push(Number(props.metadata?.count));
  }
  return out;
}

describe('chunks sized to the batch, end to end', () => {
  test('a big batch in a few big chunks, a small one in one chunk: both report right', async () => {
    const big = generate(100_000, 2401, 500);
    const small = generate(1_000, 2402, 40);
    const [b, s] = await Promise.all([submit(toNdjson(big), true), submit(toNdjson(small), false)]);
    // 100,000 ÷ (2 × 4 partitions) = 12,500 → 12,000 in whole 2,000-line pieces: 8 and a last of 4,000.
    assert.equal(b.chunks, 9);
    assert.equal(s.chunks, 1);
    assert.deepEqual(await chunkCounts(b.batchId, 9), [...Array<number>(8).fill(12_000), 4_000]);
    assert.deepEqual(await chunkCounts(s.batchId, 1), [1_000]);
    for (const [{ batchId }, txns] of [
      [b, big],
      [s, small],
    ] as const) {
      await host.until(`batch ${batchId} completed`, 180_000, async () => {
        // A refused or timed-out poll is asked again (a loaded machine); the timeout shows the host's output.
        const res = await fetch(`${host.base}/api/batches/${batchId}`).catch(() => undefined);
        if (!res) return undefined;
        const st = (await res.json()) as { status: string };
        assert.notEqual(st.status, 'failed');
        return st.status === 'completed' ? true : undefined;
      });
      const res = await fetch(`${host.base}/api/batches/${batchId}/report`);
      assert.equal(res.status, 200);
      const got = (await res.json()) as { transactions: number; rows: unknown[]; totals: unknown[] };
      const want = expectedReport(txns);
      assert.equal(got.transactions, txns.length);
      assert.deepEqual(got.rows, want.rows);
      assert.deepEqual(got.totals, want.totals);
    }
  });
});
