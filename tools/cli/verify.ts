/**
 * `pushdrain verify <batch> [file]`: reconcile a batch as its client can. The report's bytes must
 * hash to its `Repr-Digest`, to the status's `reportSha256` and, with `--event`, to the one in the
 * `batch.completed` event received (its signature is the receiver's to check, before it is saved);
 * the report's rows must add up to its totals and its totals to the control totals ingest
 * counted; and, given the file that was submitted, the control totals and the body's sha256 are
 * computed from it again, here, and must be the ones ingest returned. Exit 0 only when all agree.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';

import type { BatchStatusBody } from '../../functions/batch-status-body';
import type { Report } from '../../shared/billing/report';
import type { ControlSum, ControlTotals } from '../../shared/model/control-totals';
import { CliError, httpFailure } from './client';
import type { Ctx } from './commands';
import { EXIT } from './exit-codes';
import { num, table } from './output';
import { detectFormat } from './submit';

export interface VerifyOptions {
  /** A file holding the `batch.completed` event as received (structured-mode CloudEvent JSON). */
  event?: string;
}

/** One comparison, and whether it held. */
interface Check {
  what: string;
  ok: boolean;
  detail: string;
}

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

async function readLocal(file: string): Promise<Buffer> {
  try {
    return await readFile(file);
  } catch (e) {
    throw new CliError(`cannot read ${file}: ${(e as Error).message}`, EXIT.error);
  }
}

/** `sha-256=:<base64>:` of RFC 9530 as hex, or undefined when the field has no sha-256 member. */
function reprDigestHex(field: string | null): string | undefined {
  const m = /(?:^|,)\s*sha-256=:([A-Za-z0-9+/]+=*):/.exec(field ?? '');
  return m?.[1] ? Buffer.from(m[1], 'base64').toString('hex') : undefined;
}

/**
 * The control totals of a submitted file, computed here from its records (BigInt sums, so any
 * file is summed exactly), and the sha256 of its bytes as ingest hashes them (inflated).
 */
async function fileTotals(name: string, raw: Buffer): Promise<ControlTotals> {
  const gzipped = raw.length >= 2 && raw[0] === 0x1f && raw[1] === 0x8b;
  const content = gzipped ? await promisify(gunzip)(raw) : raw;
  const text = content.toString('utf8');
  let records: unknown[];
  try {
    records =
      detectFormat(basename(name), content) === 'json'
        ? (JSON.parse(text) as unknown[])
        : text
            .split('\n')
            .filter((l) => l.trim() !== '')
            .map((l) => JSON.parse(l) as unknown);
  } catch (e) {
    throw new CliError(`${name} is not the JSON or NDJSON of a batch: ${(e as Error).message}`, EXIT.error);
  }
  const by = new Map<string, { count: number; amount: bigint }>();
  for (const r of records) {
    const { currency, type, amount } = r as { currency?: unknown; type?: unknown; amount?: unknown };
    if (typeof currency !== 'string' || (type !== 'charge' && type !== 'refund') || typeof amount !== 'number')
      throw new CliError(`${name} holds a record that is not a transaction`, EXIT.error);
    const key = `${currency} ${type}`;
    const s = by.get(key) ?? { count: 0, amount: 0n };
    s.count++;
    s.amount += BigInt(amount);
    by.set(key, s);
  }
  const sums: ControlSum[] = [...by.entries()]
    .map(([key, s]) => {
      const [currency = '', type = 'charge'] = key.split(' ') as [string, ControlSum['type']];
      return { currency, type, count: s.count, amount: Number(s.amount) };
    })
    .sort((a, b) => (a.currency < b.currency ? -1 : a.currency > b.currency ? 1 : a.type < b.type ? -1 : 1));
  return { transactions: records.length, bodySha256: sha256(content), sums };
}

/**
 * The report's own figures against the control totals, by the CLI's own code (it imports the app
 * for types only): rows add up to totals, and totals per currency agree with the control sums.
 */
function reportDisagreements(report: Report, controls: ControlTotals | undefined): string[] {
  const out: string[] = [];
  const fields = ['transactions', 'charges', 'refunds', 'net', 'tax', 'total'] as const;
  const rows = new Map<string, number>();
  for (const r of report.rows)
    for (const f of fields) rows.set(`${r.currency} ${f}`, (rows.get(`${r.currency} ${f}`) ?? 0) + r[f]);
  const totals = new Map<string, number>();
  for (const t of report.totals) for (const f of fields) totals.set(`${t.currency} ${f}`, t[f]);
  for (const key of new Set([...rows.keys(), ...totals.keys()]))
    if ((rows.get(key) ?? 0) !== (totals.get(key) ?? 0))
      out.push(`rows ${key}: ${rows.get(key) ?? 0}, totals ${totals.get(key) ?? 0}`);
  const counted = report.rows.reduce((n, r) => n + r.transactions, 0);
  if (counted !== report.transactions) out.push(`rows transactions: ${counted}, report ${report.transactions}`);
  if (!controls) return out;
  if (report.transactions !== controls.transactions)
    out.push(`report transactions: ${report.transactions}, accepted ${controls.transactions}`);
  const want = new Map<string, number>();
  for (const c of controls.sums) {
    const add = (k: string, v: number): void => void want.set(k, (want.get(k) ?? 0) + v);
    add(`${c.currency} transactions`, c.count);
    add(`${c.currency} ${c.type === 'charge' ? 'charges' : 'refunds'}`, c.amount);
  }
  for (const t of report.totals)
    for (const f of ['transactions', 'charges', 'refunds'] as const) {
      const key = `${t.currency} ${f}`;
      if (t[f] !== (want.get(key) ?? 0)) out.push(`report ${key}: ${t[f]}, accepted ${want.get(key) ?? 0}`);
      want.delete(key);
    }
  for (const [key, v] of want) out.push(`report ${key}: 0, accepted ${v}`);
  return out;
}

function sameSums(a: readonly ControlSum[], b: readonly ControlSum[]): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** The event's data.reportSha256, after checking it is this batch's completed event. */
async function eventDigest(file: string, batchId: string): Promise<string | undefined> {
  let event: { type?: string; subject?: string; data?: { reportSha256?: string } };
  try {
    event = JSON.parse((await readLocal(file)).toString('utf8')) as typeof event;
  } catch (e) {
    if (e instanceof CliError) throw e;
    throw new CliError(`${file} is not a CloudEvent in JSON: ${(e as Error).message}`, EXIT.error);
  }
  if (event.subject !== batchId || event.type !== 'com.pushdrain.batch.completed')
    throw new CliError(`${file} is not the batch.completed event of ${batchId}`, EXIT.error);
  return event.data?.reportSha256;
}

export async function verify(ctx: Ctx, batchId: string, file: string | undefined, o: VerifyOptions): Promise<number> {
  const path = `/api/batches/${encodeURIComponent(batchId)}`;
  const status = await ctx.client.json<BatchStatusBody>(`batch ${batchId}`, path);
  if (status.status === 'failed')
    throw new CliError(`batch ${batchId} failed: ${status.error ?? 'no reason recorded'}`, EXIT.failed);
  if (status.status !== 'completed')
    throw new CliError(`batch ${batchId} is ${status.status}: nothing to verify yet`, EXIT.notReady);
  const res = await ctx.client.send('GET', `${path}/report`);
  if (res.status !== 200) throw httpFailure(`report of ${batchId}`, res);

  const checks: Check[] = [];
  const digest = sha256(res.bytes);
  const header = reprDigestHex(res.headers.get('repr-digest'));
  checks.push({
    what: 'report digest = Repr-Digest',
    ok: header === digest,
    detail: `${digest} vs ${header ?? 'none'}`,
  });
  checks.push({
    what: 'report digest = status reportSha256',
    ok: status.reportSha256 === digest,
    detail: `${digest} vs ${status.reportSha256 ?? 'none'}`,
  });
  if (o.event !== undefined) {
    const signed = await eventDigest(o.event, batchId);
    checks.push({
      what: 'report digest = event reportSha256',
      ok: signed === digest,
      detail: `${digest} vs ${signed ?? 'none'}`,
    });
  }

  let report: Report | undefined;
  try {
    report = JSON.parse(res.text) as Report;
  } catch {
    checks.push({ what: 'report is JSON', ok: false, detail: 'it does not parse' });
  }
  const controls = status.controlTotals;
  if (report) {
    const wrong = reportDisagreements(report, controls);
    checks.push({
      what: 'report rows and totals = control totals',
      ok: wrong.length === 0,
      detail: wrong.length === 0 ? 'all figures agree' : wrong.slice(0, 10).join('; '),
    });
  }
  if (!controls)
    checks.push({
      what: 'control totals in the status',
      ok: false,
      detail: 'none (a batch accepted before they were kept)',
    });

  let local: ControlTotals | undefined;
  if (file !== undefined) {
    local = await fileTotals(file, await readLocal(file));
    checks.push({
      what: 'file sha256 = accepted bodySha256',
      ok: local.bodySha256 === controls?.bodySha256,
      detail: `${local.bodySha256} vs ${controls?.bodySha256 ?? 'none'}`,
    });
    checks.push({
      what: 'file control totals = accepted',
      ok: local.transactions === controls?.transactions && sameSums(local.sums, controls.sums),
      detail: `${num(local.transactions)} transactions in the file, ${num(controls?.transactions ?? 0)} accepted`,
    });
  }

  const ok = checks.every((c) => c.ok);
  if (ctx.json) {
    console.log(
      JSON.stringify({ batchId, ok, reportSha256: digest, checks, ...(local ? { file: local } : {}) }, null, 2),
    );
  } else {
    const rows = (controls?.sums ?? []).map((s) => {
      const f = local?.sums.find((x) => x.currency === s.currency && x.type === s.type);
      const t = report?.totals.find((x) => x.currency === s.currency);
      const billed = t ? (s.type === 'charge' ? t.charges : t.refunds) : undefined;
      return [
        s.currency,
        s.type,
        f ? num(f.count) : '-',
        num(s.count),
        f ? String(f.amount) : '-',
        String(s.amount),
        billed === undefined ? '-' : String(billed),
      ];
    });
    console.log(`reconciliation of ${batchId}`);
    console.log(
      table(
        ['currency', 'type', 'file count', 'accepted count', 'file amount', 'accepted amount', 'report'],
        rows,
        [2, 3, 4, 5, 6],
      ),
    );
    for (const c of checks)
      console.log(`${c.ok ? ctx.paint('green', 'ok  ') : ctx.paint('red', 'FAIL')} ${c.what}: ${c.detail}`);
  }
  return ok ? EXIT.ok : EXIT.mismatch;
}
