/**
 * Scenario 6b, memory of the HTTP path: one batch POSTed to a fresh local host process (a cold
 * instance, as Flex gives one per burst), which ingests, drains and aggregates it alone. Its
 * peak RSS is read from /proc twice: up to the 202 (ingest; a drain the accept woke may have
 * begun), then, the high-water mark set back, up to the completed report (drain and aggregate).
 * Each case gets its own Azurite and broker, so no event of an earlier case wakes it.
 */
import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';

import { defaultTuning } from '../../../shared/config/settings';
import { LocalInstance } from '../../devstack/scale/instance';
import { type BatchSpec, gzipFile, type LinesFile, linesFile } from '../support/data';
import { startEnv } from '../support/env';
import { freshPrefix, sleep } from '../support/fleet';
import { processMemory, resetPeakRss } from '../support/process-memory';

interface HttpMemoryCase {
  /** At most this many transactions: a plain body stops at the body cap. */
  transactions: number;
  gzip: boolean;
  /**
   * The instance held as one of this many MB is: PUSHDRAIN_INSTANCE_MEMORY_MB (the app's budget)
   * and a V8 heap of half of it. Absent: the defaults on this machine.
   */
  instanceMemoryMb?: number;
  /** This many copies of the batch POSTed at once, each sent again after a 503's Retry-After. @defaultValue 1 */
  batches?: number;
}

interface HttpMemoryRun {
  transactions: number;
  gzip: boolean;
  instanceMemoryMb?: number;
  batches: number;
  /** 503s the POSTs met before each was accepted. */
  refusals: number;
  /** Every report the same rows and totals, of every transaction sent (several copies of one batch). */
  reportsAgree: boolean;
  bodyMb: number;
  /** The instance's RSS once it listened, before the request. */
  startRssMb: number;
  /** Peak RSS from start to the 202. */
  ingestPeakRssMb: number;
  /** Peak RSS from the 202 to the completed report; absent where the peak cannot be set back. */
  drainPeakRssMb?: number;
  ingestMs: number;
  /** The 202 to `completed`. */
  completeMs: number;
}

export interface HttpMemoryConfig {
  cases: HttpMemoryCase[];
  reps: number;
  sources: BatchSpec[];
  /** For one batch of up to 1,000,000 transactions on a loaded machine. */
  timeoutMs: number;
}

/** The local host takes any function key (it has no key store). */
const LOCAL_KEY = 'any-key-works-locally';

const mb = (bytes: number): number => bytes / (1024 * 1024);

async function bodyOf(c: HttpMemoryCase, sources: readonly BatchSpec[]) {
  // The app's default cap, as a new deployment has it.
  if (!c.gzip) return linesFile(c.transactions, sources, defaultTuning().maxBodyBytes);
  return gzipFile(await linesFile(c.transactions, sources));
}

async function statusOf(base: string, batchId: string): Promise<string> {
  const res = await fetch(`${base}/api/batches/${batchId}`, {
    headers: { 'x-functions-key': LOCAL_KEY },
    signal: AbortSignal.timeout(10_000),
  });
  const body = (await res.json()) as { status?: string; error?: unknown };
  if (body.status === 'failed') throw new Error(`batch ${batchId} failed: ${JSON.stringify(body.error)}`);
  return body.status ?? `HTTP ${res.status}`;
}

/** POSTs the file until it is accepted, waiting each 503's Retry-After; how many 503s it met. */
async function postUntilAccepted(
  base: string,
  body: LinesFile,
  gzip: boolean,
  deadline: number,
): Promise<{ batchId: string; refusals: number }> {
  let refusals = 0;
  for (let attempt = 0; attempt < 1_000 && Date.now() < deadline; attempt++) {
    const res = await fetch(`${base}/api/batches`, {
      method: 'POST',
      body: Readable.toWeb(createReadStream(body.file)) as ReadableStream<Uint8Array>,
      duplex: 'half',
      headers: {
        'content-type': 'application/x-ndjson',
        'content-length': String(body.bytes),
        'x-functions-key': LOCAL_KEY,
        ...(gzip ? { 'content-encoding': 'gzip' } : {}),
      },
    });
    const answer = (await res.json()) as { batchId?: string; transactions?: number };
    if (res.status === 503) {
      refusals++;
      await sleep(Number(res.headers.get('retry-after') ?? '5') * 1000);
      continue;
    }
    if (res.status !== 202 || !answer.batchId || answer.transactions !== body.lines)
      throw new Error(`POST answered ${res.status}: ${JSON.stringify(answer)} (sent ${body.lines} transactions)`);
    return { batchId: answer.batchId, refusals };
  }
  throw new Error(`no POST accepted before the deadline (${refusals} 503s)`);
}

async function untilCompleted(base: string, batchId: string, deadline: number): Promise<void> {
  let status = '';
  for (let i = 0; Date.now() < deadline && i < 100_000; i++) {
    status = await statusOf(base, batchId);
    if (status === 'completed') return;
    await sleep(250);
  }
  throw new Error(`batch ${batchId} not completed before the deadline (status ${status})`);
}

/** A completed report's transaction count, and its rows and totals as one string to compare. */
async function reportOf(base: string, batchId: string): Promise<{ transactions: number; figures: string }> {
  const res = await fetch(`${base}/api/batches/${batchId}/report`, { headers: { 'x-functions-key': LOCAL_KEY } });
  const r = (await res.json()) as { transactions: number; rows: unknown; totals: unknown };
  return { transactions: r.transactions, figures: JSON.stringify([r.rows, r.totals]) };
}

async function runCase(c: HttpMemoryCase, cfg: HttpMemoryConfig, log: (line: string) => void): Promise<HttpMemoryRun> {
  const body = await bodyOf(c, cfg.sources);
  const env = await startEnv(0);
  let instance: LocalInstance | undefined;
  try {
    instance = await LocalInstance.start('memory', {
      port: 0,
      env: {
        StorageConnection: env.azurite.connectionString,
        ServiceBusConnection: env.broker.connectionString,
        PUSHDRAIN_NAME_PREFIX: freshPrefix('pushdrain'),
        PUSHDRAIN_SWEEP_SCHEDULE: '0 0 0 1 1 *',
        ...(c.instanceMemoryMb !== undefined
          ? {
              PUSHDRAIN_INSTANCE_MEMORY_MB: String(c.instanceMemoryMb),
              NODE_OPTIONS: `--max-old-space-size=${Math.floor(c.instanceMemoryMb / 2)}`,
            }
          : {}),
      },
    });
    const pid = instance.pid;
    const start = pid === undefined ? undefined : processMemory(pid);
    if (pid === undefined || !start) throw new Error('the instance has no readable /proc status (Linux only)');
    const t0 = Date.now();
    const deadline = t0 + cfg.timeoutMs;
    const base = instance.baseUrl;
    const posted = await Promise.all(
      Array.from({ length: c.batches ?? 1 }, () => postUntilAccepted(base, body, c.gzip, deadline)),
    );
    const ingestMs = Date.now() - t0;
    const ingestPeak = processMemory(pid)?.peakRssMb ?? Number.NaN;
    const reset = resetPeakRss(pid);
    const t1 = Date.now();
    for (const { batchId } of posted) await untilCompleted(base, batchId, deadline);
    const completeMs = Date.now() - t1;
    const after = processMemory(pid);
    const reports = await Promise.all(posted.map(({ batchId }) => reportOf(base, batchId)));
    const reportsAgree = reports.every((r) => r.transactions === body.lines && r.figures === reports[0]?.figures);
    const run: HttpMemoryRun = {
      transactions: body.lines,
      gzip: c.gzip,
      ...(c.instanceMemoryMb !== undefined ? { instanceMemoryMb: c.instanceMemoryMb } : {}),
      batches: posted.length,
      refusals: posted.reduce((n, p) => n + p.refusals, 0),
      reportsAgree,
      bodyMb: mb(body.bytes),
      startRssMb: start.rssMb,
      ingestPeakRssMb: ingestPeak,
      ...(reset && after ? { drainPeakRssMb: after.peakRssMb } : {}),
      ingestMs,
      completeMs,
    };
    log(
      `  memory over HTTP: ${run.batches} × ${body.lines} transactions ${c.gzip ? 'gzip' : 'plain'} (${run.bodyMb.toFixed(1)} MB)${c.instanceMemoryMb ? ` as a ${c.instanceMemoryMb} MB instance` : ''}, ${run.refusals} 503s, reports ${reportsAgree ? 'agree' : 'DIFFER'}: start ${run.startRssMb.toFixed(0)} MB, ingest peak ${run.ingestPeakRssMb.toFixed(0)} MB, drain peak ${run.drainPeakRssMb?.toFixed(0) ?? '?'} MB`,
    );
    return run;
  } finally {
    await instance?.stop();
    await env.stop();
  }
}

export interface HttpMemoryResultRun extends HttpMemoryRun {
  rep: number;
}

export async function runHttpMemory(
  cfg: HttpMemoryConfig,
  log: (line: string) => void,
): Promise<HttpMemoryResultRun[]> {
  const out: HttpMemoryResultRun[] = [];
  for (let rep = 0; rep < cfg.reps; rep++) {
    for (const c of cfg.cases) out.push({ ...(await runCase(c, cfg, log)), rep });
  }
  return out;
}
