/**
 * `node dist/tools/bench/cli-wait.js`: what `pushdrain submit`'s wait costs. On the local stack, each
 * batch is followed at once by the wait as it was (a plain GET every 500 ms) and by the CLI's wait as
 * it is (`follow`: conditional GETs spaced by nextPollMs), side by side on the same batch. Reports
 * looks and Storage transactions per batch (each look reads the manifest once: measured, not assumed,
 * from the app's meter in `GET /api/health`), and how late each noticed the end. Figures, never asserted.
 */
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';

import type { BatchStatusBody } from '../../functions/batch-status-body';
import { entityNames } from '../../shared/names';
import { LOCAL_KEY, type LocalStack, startLocalStack, submitHeld, wake } from '../../test/support/local-stack';
import { ApiClient, type Response } from '../cli/client';
import { type Accepted, follow } from '../cli/submit';
import { generate, toNdjson } from '../testkit/generate';

interface Row {
  batchId: string;
  lines: number;
  /** How long its events were held back (a batch waiting behind a backlog). */
  heldMs: number;
  chunks: number;
  /** Accepted → completedAt, ms. */
  batchMs: number;
  /** Storage transactions of the whole batch (ingest, map, reduce, delivery), both waits excluded. */
  batchTx: number;
  old: { looks: number; tx: number; lateMs: number };
  now: { looks: number; notModified: number; tx: number; lateMs: number };
}

/** An ApiClient that counts what it sends. */
class CountingClient extends ApiClient {
  looks = 0;
  notModified = 0;
  override async send(
    method: string,
    path: string,
    init: { body?: string; headers?: Record<string, string>; key?: string } = {},
  ): Promise<Response> {
    const res = await super.send(method, path, init);
    this.looks++;
    if (res.status === 304) this.notModified++;
    return res;
  }
}

async function storageTx(stack: LocalStack): Promise<number> {
  const res = await fetch(`${stack.host.base}/api/health`);
  return ((await res.json()) as { storageTransactions: { total?: number } }).storageTransactions.total ?? 0;
}

async function getStatus(stack: LocalStack, batchId: string, etag?: string): Promise<globalThis.Response> {
  return fetch(`${stack.host.base}/api/batches/${batchId}`, {
    headers: { 'x-functions-key': LOCAL_KEY, ...(etag ? { 'If-None-Match': etag } : {}) },
  });
}

/** The wait as it was: a GET every 500 ms until the batch is completed or failed. */
async function oldWait(stack: LocalStack, batchId: string): Promise<{ looks: number; doneAt: number }> {
  for (let looks = 1; looks < 100_000; looks++) {
    const s = (await (await getStatus(stack, batchId)).json()) as BatchStatusBody;
    if (s.status === 'completed' || s.status === 'failed') return { looks, doneAt: Date.now() };
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error('the old wait did not end');
}

/** Storage transactions of `n` looks (plain and conditional) at a finished batch, with nothing else running. */
async function txPerLook(stack: LocalStack, batchId: string, n = 20): Promise<{ plain: number; conditional: number }> {
  const etag = (await getStatus(stack, batchId)).headers.get('etag') ?? undefined;
  const t0 = await storageTx(stack);
  for (let i = 0; i < n; i++) await (await getStatus(stack, batchId)).text();
  const t1 = await storageTx(stack);
  for (let i = 0; i < n; i++) {
    const res = await getStatus(stack, batchId, etag);
    if (res.status !== 304) throw new Error(`expected 304, got ${res.status}`);
    await res.text();
  }
  const t2 = await storageTx(stack);
  return { plain: (t1 - t0) / n, conditional: (t2 - t1) / n };
}

/**
 * One batch of `lines`, followed by both waits. With `heldMs`, its WorkDetected events are held back
 * by the broker and sent that much later: a batch that waits behind a backlog, where nothing changes.
 */
async function one(stack: LocalStack, lines: number, seed: number, heldMs = 0): Promise<Row> {
  const before = await storageTx(stack);
  const body = toNdjson(generate(lines, seed, Math.max(5, Math.round(lines / 1000))));
  const accepted = { ...(await send(stack, body, heldMs > 0)), replayed: false };
  if (heldMs > 0)
    setTimeout(() => void wake(stack, entityNames(stack.prefix, PARTITIONS).inputQueues()), heldMs).unref();
  const acceptedAt = Date.now();
  const client = new CountingClient({ url: stack.host.base, key: LOCAL_KEY });
  const newWait = follow(client, accepted, { timeoutSeconds: 1800, pollMs: 500, progress: false }).then((final) => ({
    final,
    doneAt: Date.now(),
  }));
  const [old, { final, doneAt }] = await Promise.all([oldWait(stack, accepted.batchId), newWait]);
  const completedAt = Date.parse(final.completedAt ?? '');
  // Let the delivery and the last writes settle, then read the meter.
  await new Promise((r) => setTimeout(r, 2000));
  const after = await storageTx(stack);
  return {
    batchId: accepted.batchId,
    lines,
    heldMs,
    chunks: accepted.chunks,
    batchMs: completedAt - acceptedAt,
    batchTx: after - before - old.looks - client.looks,
    old: { looks: old.looks, tx: old.looks, lateMs: old.doneAt - completedAt },
    now: { looks: client.looks, notModified: client.notModified, tx: client.looks, lateMs: doneAt - completedAt },
  };
}

const PARTITIONS = 4;

async function send(stack: LocalStack, body: Buffer, held: boolean): Promise<Omit<Accepted, 'replayed'>> {
  if (held) {
    const { batchId, chunks } = await submitHeld(stack, body);
    return { batchId, chunks, status: 'accepted', transactions: 0 };
  }
  const res = await fetch(`${stack.host.base}/api/batches`, {
    method: 'POST',
    // Gzip, as the CLI sends it (a large batch is over the body limit uncompressed).
    body: gzipSync(body),
    headers: { 'Content-Type': 'application/x-ndjson', 'Content-Encoding': 'gzip', 'x-functions-key': LOCAL_KEY },
  });
  if (res.status !== 202) throw new Error(`submit: HTTP ${res.status} ${await res.text()}`);
  return (await res.json()) as Omit<Accepted, 'replayed'>;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      sizes: { type: 'string', default: '1000,20000,200000' },
      repeat: { type: 'string', default: '2' },
      /** Seconds a 1,000-line batch is held before its events are sent (comma-separated; empty for none). */
      held: { type: 'string', default: '30,120' },
    },
  });
  const sizes = values.sizes.split(',').map(Number);
  const repeat = Number(values.repeat);
  const stack = await startLocalStack();
  try {
    const rows: Row[] = [];
    let seed = 900;
    for (const lines of sizes)
      for (let i = 0; i < repeat; i++) {
        const row = await one(stack, lines, seed++);
        rows.push(row);
        console.error(JSON.stringify(row));
      }
    for (const seconds of values.held.split(',').filter((v) => v !== '')) {
      const row = await one(stack, 1000, seed++, Number(seconds) * 1000);
      rows.push(row);
      console.error(JSON.stringify(row));
    }
    const last = rows.at(-1);
    const perLook = last ? await txPerLook(stack, last.batchId) : undefined;
    console.log(JSON.stringify({ perLook, rows }, null, 2));
  } finally {
    await stack.stop();
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
