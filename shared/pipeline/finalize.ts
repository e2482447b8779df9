/**
 * Completes a batch once every chunk is done or failed: merge the chunk partials into the
 * report, write `reports/{batchId}.json`, then mark the manifest. Safe to run twice
 * (concurrent aggregators, or ingest and an aggregator): the report is the same bytes and
 * the manifest keeps its first completion.
 */
import type { Manifest } from '../batch/manifest';
import { isSettled, isTerminal } from '../batch/manifest';
import { ReportBuilder } from '../billing/report';
import { readResultHeader } from '../billing/result-blob';
import { TransientError } from '../errors';
import { resultBlobName } from '../model/pointers';
import { readBlob, writeBlob } from '../storage/blob-io';
import { mapLimit } from '../util/pool';
import type { PipelineContext } from './context';

const READ_CONCURRENCY = 8;

export const reportBlobName = (batchId: string): string => `${batchId}.json`;

/**
 * Finalizes each batch at most once at a time in this process: the last coalesced progress
 * write resolves up to 32 callers with the same settled manifest, and one report is enough.
 */
export class Finalizer {
  private readonly inflight = new Map<string, Promise<void>>();

  constructor(private readonly ctx: PipelineContext) {}

  async ifSettled(m: Manifest | undefined): Promise<void> {
    if (!m || m.state !== 'accepted' || !isSettled(m)) return;
    let p = this.inflight.get(m.batchId);
    if (!p) {
      p = finalize(this.ctx, m).finally(() => this.inflight.delete(m.batchId));
      this.inflight.set(m.batchId, p);
    }
    await p;
  }
}

async function finalize(ctx: PipelineContext, m: Manifest): Promise<void> {
  const failed = m.failed.length > 0;
  if (!failed) {
    const results = ctx.container('results');
    const builder = new ReportBuilder();
    const headers = await mapLimit(m.done, READ_CONCURRENCY, async (chunk) => {
      const got = await readBlob(results.getBlockBlobClient(resultBlobName(m.batchId, chunk)));
      // Written before its pointer was sent, so absence is a storage hiccup, not a state.
      if (!got) throw new TransientError(`result blob for chunk ${chunk} of ${m.batchId} is missing`);
      return readResultHeader(got.body);
    });
    for (const h of headers) builder.add(h.partials);
    const report = builder.build(m.batchId);
    if (report.transactions !== m.transactions) {
      throw new TransientError(`report for ${m.batchId} counts ${report.transactions} transactions, manifest ${m.transactions}`);
    }
    const body = Buffer.from(JSON.stringify(report), 'utf8');
    await writeBlob(ctx.container('reports').getBlockBlobClient(reportBlobName(m.batchId)), body, { contentType: 'application/json' });
  }
  const now = ctx.now();
  const updated = await ctx.manifests.update(m.batchId, (cur) => {
    if (isTerminal(cur) || cur.state !== 'accepted') return undefined;
    cur.state = failed ? 'failed' : 'completed';
    cur.completedAt = new Date(now).toISOString();
    cur.latencyMs = now - Date.parse(cur.submittedAt);
    if (failed) cur.error = `${cur.failed.length} of ${cur.chunks} chunks failed: ${cur.failed.slice(0, 5).map((f) => `chunk ${f.chunk}: ${f.reason}`).join('; ')}`;
    return cur;
  });
  if (updated?.manifest.state === 'completed' && updated.manifest.completedAt === new Date(now).toISOString()) {
    ctx.log.info(`batch ${m.batchId} completed: ${m.transactions} transactions in ${m.chunks} chunks, ${updated.manifest.latencyMs ?? 0} ms after submission`);
  }
}
