/**
 * Scenario 6, memory: the timer path (sweepIncoming) ingests one NDJSON file from `incoming/`
 * in a fresh child process, which reports its peak RSS. Two file sizes show how the peak moves
 * with the file. The file is uploaded by the parent, so the child never holds it: what it
 * streams, validates, chunks and writes is all it has in memory.
 */
import { PushdrainApp } from '../../../shared/app';
import { composeApp } from '../../../shared/create-app';
import { layout } from '../../../shared/layout';
import { provisionStorage } from '../../devstack/provision-storage';
import { runChild } from '../support/child';
import { type BatchSpec, linesFile } from '../support/data';
import { adminClients, appSettings, type BenchEnv, removeApp } from '../support/env';
import { freshPrefix } from '../support/fleet';
import { benchLog } from '../support/log';
import { NullPublisher } from '../support/null-publisher';

export interface MemoryJob {
  kind: 'memory';
  storage: string;
  prefix: string;
  transactions: number;
}

export interface MemoryRun {
  transactions: number;
  fileBytes: number;
  /** RSS high-water mark of the whole child, and its RSS before the sweep started. */
  peakRssMb: number;
  startRssMb: number;
  peakHeapUsedMb: number;
  ingestMs: number;
}

const INCOMING_NAME = 'bench-batch.ndjson';

const mb = (bytes: number): number => bytes / (1024 * 1024);

export async function memoryJob(job: MemoryJob): Promise<MemoryRun> {
  const settings = appSettings({ storage: job.storage }, job.prefix);
  const parts = composeApp(settings, {
    publisher: new NullPublisher(),
    log: benchLog,
  });
  const app = new PushdrainApp(parts);
  try {
    await provisionStorage(settings);
    const info = await parts.blobs.info(layout.file('incoming', INCOMING_NAME));
    // Sample the heap while the sweep runs: maxRSS gives the peak RSS, this the peak live heap.
    let peakHeap = process.memoryUsage().heapUsed;
    const sampler = setInterval(() => (peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed)), 50);
    const startRss = process.memoryUsage().rss;
    const t0 = Date.now();
    const outcomes = await parts.sweeper.incoming().finally(() => clearInterval(sampler));
    const ingestMs = Date.now() - t0;
    const o = outcomes.find((x) => x.name === INCOMING_NAME);
    if (o?.kind !== 'ingested' || o.result.transactions !== job.transactions)
      throw new Error(`sweep did not ingest the file: ${JSON.stringify(o)}`);
    return {
      transactions: o.result.transactions,
      fileBytes: info?.size ?? 0,
      // resourceUsage().maxRSS is in kilobytes.
      peakRssMb: process.resourceUsage().maxRSS / 1024,
      startRssMb: mb(startRss),
      peakHeapUsedMb: mb(peakHeap),
      ingestMs,
    };
  } finally {
    await app.close();
    await removeApp(adminClients(job.storage), job.prefix);
  }
}

export interface MemoryConfig {
  sizes: number[];
  reps: number;
  /** Where the lines come from (the throughput batches, so nothing new is generated). */
  sources: BatchSpec[];
}

export interface MemoryResultRun extends MemoryRun {
  size: number;
  rep: number;
}

export async function runMemory(env: BenchEnv, cfg: MemoryConfig): Promise<MemoryResultRun[]> {
  const out: MemoryResultRun[] = [];
  for (let rep = 0; rep < cfg.reps; rep++) {
    for (const size of cfg.sizes) {
      const { file } = await linesFile(size, cfg.sources);
      const prefix = freshPrefix('pushdrain');
      const incoming = env.admin.blobs.getContainerClient(`${prefix}incoming`);
      await incoming.createIfNotExists();
      await incoming.getBlockBlobClient(INCOMING_NAME).uploadFile(file);
      const run = await runChild<MemoryRun>(
        { kind: 'memory', storage: env.azurite.connectionString, prefix, transactions: size } satisfies MemoryJob,
        { timeoutMs: 600_000 },
      );
      out.push({ ...run, size, rep });
    }
  }
  return out;
}
