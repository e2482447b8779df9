/**
 * Scenario 7, the machine's limit: the same work pushdrain does per transaction, in one
 * process with no storage and no queues: parse NDJSON → validate (to a canonical line) → gzip
 * a chunk → gunzip it → read it back → bill it → fold it into the report. The same batches as
 * the throughput run, cut as pushdrain cuts them (its chunk size rule, from the batch's
 * transactions and longest line, measured before the clock starts), the same shared functions, so the ratio is
 * pushdrain's overhead and nothing else.
 */
import { billChunk } from '../../../shared/billing/bill';
import { ReportBuilder } from '../../../shared/billing/report';
import { defaultTuning } from '../../../shared/config/settings';
import { DEFAULT_TAX_RATES } from '../../../shared/config/tax-rates';
import { bufferSource } from '../../../shared/ingest/body';
import { checkRecord } from '../../../shared/ingest/check-record';
import { type BatchShape, chunkRule } from '../../../shared/ingest/chunk-size';
import { readRecordBatches } from '../../../shared/ingest/records';
import { decodeChunk, encodeChunkLines } from '../../../shared/model/chunk-codec';
import { processCpuSeconds } from '../support/cpu';
import { batchBody, type BatchSpec } from '../support/data';
import { type Profiling, startProfiling } from '../support/profiler';

export interface LimitJob {
  kind: 'limit';
  batches: BatchSpec[];
  /** Write a CPU profile of the measured loop here (beside pushdrain's, function by function). */
  profileFile?: string;
}

export interface LimitRun {
  transactions: number;
  elapsedMs: number;
  cpuSeconds: number;
  tps: number;
  profileFile?: string;
}

export async function limitJob(job: LimitJob): Promise<LimitRun> {
  const bodies = job.batches.map(batchBody);
  const tuning = defaultTuning();
  const rule = chunkRule(tuning);
  const plans = bodies.map((b) => rule.plan(shapeOf(b)));
  const rates = { ...DEFAULT_TAX_RATES };
  let transactions = 0;
  const profiling: Profiling | undefined = job.profileFile ? await startProfiling(job.profileFile) : undefined;
  const cpu0 = processCpuSeconds();
  const t0 = performance.now();
  for (const [i, body] of bodies.entries()) {
    const plan = plans[i]!;
    const builder = new ReportBuilder();
    let chunk: string[] = [];
    let index = 0;
    const fold = async (lines: string[]): Promise<void> => {
      const enc = await encodeChunkLines(index++, lines, plan.piece);
      builder.add(billChunk(await decodeChunk(enc.body, enc.sha256), rates).partials);
    };
    // Read as ingest reads, a slice's records at a time.
    for await (const batch of readRecordBatches(bufferSource(body, false, tuning.maxInflatedBytes)(), 'ndjson')) {
      for (const rec of batch) {
        // The per-record check of ingest (parse, validate, canonical line), without the batch-wide rules.
        const r = rec.error === undefined ? checkRecord(rec) : undefined;
        if (!r || 'errors' in r) throw new Error(`generated data is invalid at line ${rec.line}`);
        chunk.push(r.canonical);
        if (chunk.length === plan.size) {
          await fold(chunk);
          chunk = [];
        }
      }
    }
    if (chunk.length > 0) await fold(chunk);
    transactions += builder.build('limit').transactions;
  }
  const elapsedMs = performance.now() - t0;
  const cpuSeconds = processCpuSeconds() - cpu0;
  const profileFile = profiling ? await profiling.stop() : undefined;
  return {
    transactions,
    elapsedMs,
    cpuSeconds,
    tps: (transactions * 1000) / elapsedMs,
    ...(profileFile ? { profileFile } : {}),
  };
}

/** Lines and the longest line of a generated NDJSON batch (its lines are canonical already). */
function shapeOf(body: Buffer): BatchShape {
  let transactions = 0;
  let longestLine = 0;
  for (let start = 0; start < body.length;) {
    let end = body.indexOf(0x0a, start);
    if (end === -1) end = body.length;
    if (end > start) transactions++;
    longestLine = Math.max(longestLine, end - start);
    start = end + 1;
  }
  return { transactions, longestLine };
}
