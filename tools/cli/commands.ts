/** The read and operator commands: status, report, batches, queues, redrive. */
import { writeFile } from 'node:fs/promises';

import type { BatchStatusBody } from '../../functions/batch-status-body';
import type { BatchSummary } from '../../shared/batch/batch-list';
import type { BatchPage } from '../../shared/batch/batch-pages';
import type { Report } from '../../shared/billing/report';
import type { BatchCost } from '../../shared/cost/batch-cost';
import type { DeadLetterRedriveResult } from '../../shared/poison/dead-letter-redrive';
import type { RedriveResult } from '../../shared/poison/redrive';
import type { StatusReport } from '../../shared/status/status-report';
import { type ApiClient, CliError, httpFailure } from './client';
import { deliveriesSummary, deliveryLines } from './deliveries';
import { EXIT } from './exit-codes';
import { age, duration, money, num, type Painter, table } from './output';

export interface Ctx {
  client: ApiClient;
  json: boolean;
  paint: Painter;
  adminKey: string | undefined;
}

const out = (text: string): void => console.log(text);
const printJson = (v: unknown): void => out(JSON.stringify(v, null, 2));

function statusColor(paint: Painter, status: string): string {
  return status === 'completed'
    ? paint('green', status)
    : status === 'failed'
      ? paint('red', status)
      : paint('yellow', status);
}

export async function batchStatus(ctx: Ctx, batchId: string): Promise<number> {
  const s = await ctx.client.json<BatchStatusBody>(`batch ${batchId}`, `/api/batches/${encodeURIComponent(batchId)}`);
  if (ctx.json) printJson(s);
  else {
    const latency = s.completedAt
      ? `, ${duration(Date.parse(s.completedAt) - Date.parse(s.submittedAt))} from submission`
      : '';
    out(
      `${s.batchId}: ${statusColor(ctx.paint, s.status)}, ${num(s.chunksDone)}/${num(s.chunks)} chunks done${s.chunksFailed ? `, ${num(s.chunksFailed)} failed` : ''}, ${num(s.transactions)} transactions, submitted ${s.submittedAt}${latency}`,
    );
    if (s.error) out(`error: ${s.error}`);
    if (s.cost) out(costLine(s.cost));
  }
  return EXIT.ok;
}

/** What the batch used and its estimate, in one line. */
function costLine(c: BatchCost): string {
  const cpu = c.cpuMs.ingest + c.cpuMs.map + c.cpuMs.reduce;
  const e = c.estimate;
  const prices = e.pricesAsOf ? `list prices of ${e.pricesAsOf}` : 'your prices';
  return `cost: ${num(c.storageTransactions)} storage transactions, ${num(c.serviceBusOperations)} Service Bus operations, CPU ${cpu.toFixed(1)} ms (ingest ${c.cpuMs.ingest.toFixed(1)}, map ${c.cpuMs.map.toFixed(1)}, reduce ${c.cpuMs.reduce.toFixed(1)}); est. $${e.perBatch.toPrecision(3)} per batch, $${e.per1000Transactions.toPrecision(3)} per 1,000 transactions (${prices})`;
}

/** `command` names what failed in an error: the command the user ran, not the route it reads. */
function status(ctx: Ctx, command: string): Promise<StatusReport> {
  return ctx.client.json<StatusReport>(command, '/api/ops/status');
}

export async function systemStatus(ctx: Ctx): Promise<number> {
  const s = await status(ctx, 'status');
  if (ctx.json) {
    printJson(s);
    return EXIT.ok;
  }
  const queued = s.queues.reduce((n, q) => n + q.depth, 0);
  const dead = s.serviceBus.available ? s.serviceBus.entities.reduce((n, e) => n + e.deadLetters, 0) : undefined;
  const w = s.storage.window;
  out(`instance ${s.instance.id}, up ${age(s.instance.uptimeSeconds)}, at ${s.generatedAt}`);
  out(
    `queued: ${num(queued)} message(s) over ${s.queues.length} queues; poison: ${num(s.poison.total)}; dead letters: ${dead === undefined ? `unknown (${s.serviceBus.available ? '' : s.serviceBus.reason})` : num(dead)}`,
  );
  out(`drains here: ${num(s.drains.running)} running, ${num(s.drains.tasks)} tasks`);
  out(deliveriesSummary(s.deliveries, ctx.paint));
  out(
    `batches: ${num(s.batches.counts.accepted + s.batches.counts.processing)} open, ${num(s.batches.counts.completed)} completed, ${num(s.batches.counts.failed)} failed`,
  );
  out(
    `storage: ${num(s.storage.byOperation.total)} transactions since start; last ${age(w.seconds)}: ${w.perThousand ?? '–'} per 1,000 business tx, ${idleFigure(w)}`,
  );
  return EXIT.ok;
}

/**
 * The idle cost: an hourly rate only once the app has had enough idle time for one to mean
 * something (the app decides: `idlePerHour` is null until then), else what was counted and over
 * how long.
 */
function idleFigure(w: StatusReport['storage']['window']): string {
  if (w.idlePerHour !== null) return `idle ${num(w.idlePerHour)} per hour (${age(w.idleSeconds)} idle)`;
  if (w.idleSeconds === 0) return 'no idle period yet';
  return `idle ${num(w.idleStorageTransactions)} in ${age(w.idleSeconds)} (an hourly rate after ${age(w.idleRateAfterSeconds)} of idle)`;
}

/** A failed batch has finished and will have no report (until a redrive reopens it): say why, from its manifest. */
async function failedBatch(ctx: Ctx, batchId: string): Promise<CliError> {
  const b = await ctx.client.json<BatchStatusBody>(`batch ${batchId}`, `/api/batches/${encodeURIComponent(batchId)}`);
  // The error names the failed chunks and their reasons (a watchdog's timeout says what it found).
  const why = b.error ?? `${num(b.chunksFailed)} of ${num(b.chunks)} chunks failed, no reason recorded`;
  const message = `batch ${batchId} failed: ${why}; it has no report. After fixing the cause: pushdrain redrive --batch ${batchId}`;
  return new CliError(message, EXIT.failed, { error: 'batch_failed', message, status: 'failed' }, 409);
}

export async function report(ctx: Ctx, batchId: string, csv: boolean, file: string | undefined): Promise<number> {
  const path = `/api/batches/${encodeURIComponent(batchId)}/report${csv ? '?format=csv' : ''}`;
  const res = await ctx.client.send('GET', path);
  if (res.status === 409) {
    const s = (JSON.parse(res.text) as { status?: string }).status ?? 'unfinished';
    if (s === 'failed') throw await failedBatch(ctx, batchId);
    throw new CliError(
      `batch ${batchId} is ${s}: no report yet`,
      EXIT.notReady,
      { error: 'not_ready', status: s },
      409,
    );
  }
  if (res.status !== 200) throw httpFailure(`report of ${batchId}`, res);
  if (file !== undefined) {
    try {
      await writeFile(file, res.text);
    } catch (e) {
      throw new CliError(`cannot write ${file}: ${(e as Error).message}`, EXIT.error);
    }
    if (ctx.json) printJson({ batchId, file, bytes: Buffer.byteLength(res.text), format: csv ? 'csv' : 'json' });
    else process.stderr.write(`wrote ${file} (${num(Buffer.byteLength(res.text))} bytes)\n`);
    return EXIT.ok;
  }
  if (csv) process.stdout.write(res.text);
  else if (ctx.json) out(res.text);
  else {
    const r = JSON.parse(res.text) as Report;
    out(`report ${r.batchId}: ${num(r.transactions)} transactions, ${num(r.rows.length)} account/currency rows`);
    out(
      table(
        ['currency', 'transactions', 'charges', 'refunds', 'net', 'tax', 'total'],
        r.totals.map((t) => [
          t.currency,
          num(t.transactions),
          money(t.charges, t.currency),
          money(t.refunds, t.currency),
          money(t.net, t.currency),
          money(t.tax, t.currency),
          money(t.total, t.currency),
        ]),
        [1, 2, 3, 4, 5, 6],
      ),
    );
    const shown = r.rows.slice(0, 20);
    out('');
    out(
      table(
        ['account', 'currency', 'transactions', 'total'],
        shown.map((row) => [row.account, row.currency, num(row.transactions), money(row.total, row.currency)]),
        [2, 3],
      ),
    );
    if (r.rows.length > shown.length)
      out(`… ${num(r.rows.length - shown.length)} more rows: pushdrain report ${r.batchId} --csv -o ${r.batchId}.csv`);
  }
  return EXIT.ok;
}

function batchRow(b: BatchSummary, paint: Painter): string[] {
  return [
    b.batchId,
    statusColor(paint, b.status),
    `${num(b.chunksDone)}/${num(b.chunks)}${b.chunksFailed ? ` (${num(b.chunksFailed)} failed)` : ''}`,
    num(b.transactions),
    b.submittedAt,
    duration(b.latencyMs),
  ];
}

/**
 * GET /api/batches, the listing every caller that may see batches can read: a submitter gets its
 * own (`scope: own`), a reader or a key holder every batch. Newest first, a page at a time.
 */
export async function batches(ctx: Ctx, o: { limit?: number; cursor?: string } = {}): Promise<number> {
  const query = new URLSearchParams({
    ...(o.limit !== undefined ? { limit: String(o.limit) } : {}),
    ...(o.cursor !== undefined ? { cursor: o.cursor } : {}),
  }).toString();
  const page = await ctx.client.json<BatchPage>('batches', `/api/batches${query ? `?${query}` : ''}`);
  if (ctx.json) {
    printJson(page);
    return EXIT.ok;
  }
  const head = ['batch', 'status', 'chunks', 'transactions', 'submitted', 'latency'];
  out(`${page.scope === 'own' ? 'your batches' : 'batches'}, newest first (${num(page.batches.length)} shown):`);
  out(
    page.batches.length > 0
      ? table(
          head,
          page.batches.map((b) => batchRow(b, ctx.paint)),
          [3],
        )
      : '  none',
  );
  if (page.truncated) out('(the listing stopped at its bound: older batches may be missing)');
  if (page.next) out(`older: pushdrain batches --cursor ${page.next}`);
  return EXIT.ok;
}

export async function queues(ctx: Ctx): Promise<number> {
  const s = await status(ctx, 'queues');
  if (ctx.json) {
    printJson({
      queues: s.queues,
      poison: s.poison,
      serviceBus: s.serviceBus,
      drains: s.drains,
      deliveries: s.deliveries,
    });
    return EXIT.ok;
  }
  const draining = new Map(s.drains.byQueue.map((d) => [d.queue, d]));
  out(
    table(
      ['queue', 'depth', 'oldest', 'poison', 'oldest poison', 'drain here'],
      s.queues.map((q) => {
        const d = draining.get(q.name);
        return [
          q.name,
          num(q.depth),
          age(q.oldestAgeSeconds),
          q.poison.depth > 0 ? ctx.paint('red', num(q.poison.depth)) : '0',
          age(q.poison.oldestAgeSeconds),
          d ? `${d.state}, ${d.tasks} tasks` : '–',
        ];
      }),
      [1, 3],
    ),
  );
  out(`drains running here: ${num(s.drains.running)} (${num(s.drains.tasks)} tasks)`);
  for (const p of s.poison.shown.slice(0, 10))
    out(`poison: ${p.queue} ${p.batchId ?? '?'} chunk ${p.chunk ?? '?'}: ${p.reason} (${p.at})`);
  out(deliveriesSummary(s.deliveries, ctx.paint));
  for (const line of deliveryLines(s.deliveries)) out(line);
  out('');
  if (!s.serviceBus.available) out(`Service Bus: not available: ${s.serviceBus.reason}`);
  else {
    const bus = s.serviceBus;
    const n = (v: number, truncated: boolean): string => `${truncated ? '≥' : ''}${num(v)}`;
    out(
      table(
        ['Service Bus entity', 'active', 'scheduled', 'dead letters', 'note'],
        bus.entities.map((e) => [
          e.entity,
          n(e.active, e.truncated),
          num(e.scheduled),
          e.deadLetters > 0 ? ctx.paint('red', n(e.deadLetters, e.deadLettersTruncated)) : '0',
          e.error ?? '',
        ]),
        [1, 2, 3],
      ),
    );
    for (const e of bus.entities)
      for (const d of e.deadLettered.slice(0, 5))
        out(`dead letter: ${e.entity}: ${d.reason}${d.description ? `: ${d.description}` : ''} (${d.enqueuedAt})`);
  }
  return EXIT.ok;
}

export async function redrive(ctx: Ctx, o: { queue?: string; batch?: string; max?: number }): Promise<number> {
  const body = {
    ...(o.queue !== undefined ? { queue: o.queue } : {}),
    ...(o.batch !== undefined ? { batchId: o.batch } : {}),
    ...(o.max !== undefined ? { max: o.max } : {}),
  };
  const r = await ctx.client.postJson<RedriveResult>('redrive', '/api/ops/redrive', body, ctx.adminKey);
  if (ctx.json) printJson(r);
  else {
    const where = Object.entries(r.byQueue)
      .map(([q, k]) => `${q}: ${k}`)
      .join(', ');
    out(`moved ${num(r.moved)} poison message(s) back${where ? ` (${where})` : ''}; ${num(r.skipped)} skipped`);
    if (r.reopenedBatches.length > 0) out(`reopened: ${r.reopenedBatches.join(', ')}`);
  }
  return EXIT.ok;
}

/** Exit 7 (unavailable) when an entity failed part-way; what moved is printed all the same. */
export async function redriveDeadLetters(ctx: Ctx, o: { entity?: string; max?: number }): Promise<number> {
  const body = {
    deadLetters: true,
    ...(o.entity !== undefined ? { entity: o.entity } : {}),
    ...(o.max !== undefined ? { max: o.max } : {}),
  };
  const r = await ctx.client.postJson<DeadLetterRedriveResult>('redrive', '/api/ops/redrive', body, ctx.adminKey);
  const failed = Object.entries(r.failed);
  if (ctx.json) printJson(r);
  else {
    const where = Object.entries(r.byEntity)
      .filter(([, k]) => k > 0)
      .map(([e, k]) => `${e}: ${k}`)
      .join(', ');
    out(`resubmitted ${num(r.moved)} dead letter(s)${where ? ` (${where})` : ''}; ${num(r.kept.length)} kept`);
    for (const k of r.kept) out(`kept: ${k.entity} #${k.sequenceNumber} (${k.deadLetterReason}): ${k.problem}`);
    for (const [entity, error] of failed) out(ctx.paint('red', `failed: ${entity}: ${error}`));
  }
  return failed.length > 0 ? EXIT.unavailable : EXIT.ok;
}
