/**
 * A V8 CPU profile of just the measured window (the same profiler and .cpuprofile format as
 * `node --cpu-prof`, which would also profile start-up and the checks after the run), and
 * the reading of one: self time per function, top first.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { dirname } from 'node:path';

export interface Profiling {
  /** Stops, writes the .cpuprofile, and returns its path. */
  stop(): Promise<string>;
}

export async function startProfiling(file: string): Promise<Profiling> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return {
    stop: async () => {
      const { profile } = await session.post('Profiler.stop');
      session.disconnect();
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, JSON.stringify(profile));
      return file;
    },
  };
}

export interface HotFunction {
  name: string;
  /** file:line, relative to the repo where possible. */
  where: string;
  selfMs: number;
  selfPercent: number;
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples?: number[];
  timeDeltas?: number[];
}

/** Our compiled files are named by their TypeScript source (lines differ after compilation, so none); others keep file:line. */
function sourceOf(url: string, repoRoot: string, lineNumber: number): string {
  const path = url.replace(/^file:\/\//, '');
  if (path.startsWith(`${repoRoot}/`)) {
    const rel = path.slice(repoRoot.length + 1);
    const m = /^dist[^/]*\/(.*)\.js$/.exec(rel);
    if (m?.[1] && !rel.includes('node_modules/')) return `${m[1]}.ts`;
    return `${rel}:${lineNumber + 1}`;
  }
  return `${path}:${lineNumber + 1}`;
}

/** V8's bookkeeping entries, not functions of anybody's code. */
const META = new Set(['(idle)', '(program)', '(root)']);

interface SelfTime {
  name: string;
  where: string;
  us: number;
}

/** Self time by function (name + location), from the samples; meta entries are left out, GC kept. */
function selfTimes(file: string, repoRoot: string): { all: SelfTime[]; totalUs: number } {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<string, SelfTime>();
  let totalUs = 0;
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  for (let i = 0; i < samples.length; i++) {
    const node = byId.get(samples[i] as number);
    // V8 stores the time before each sample; the next delta is this sample's duration.
    const us = Math.max(0, deltas[i + 1] ?? 0);
    if (!node || META.has(node.callFrame.functionName)) continue;
    totalUs += us;
    const { functionName, url, lineNumber } = node.callFrame;
    const where = url ? sourceOf(url, repoRoot, lineNumber) : '(native)';
    const key = `${functionName}@${where}`;
    const e = self.get(key) ?? { name: functionName || '(anonymous)', where, us: 0 };
    e.us += us;
    self.set(key, e);
  }
  return { all: [...self.values()].sort((a, b) => b.us - a.us), totalUs };
}

/** Self time by function, top first. */
export function topFunctions(
  file: string,
  count: number,
  repoRoot: string,
): { top: HotFunction[]; totalMs: number; gcMs: number } {
  const { all, totalUs } = selfTimes(file, repoRoot);
  const gc = all.find((e) => e.name === '(garbage collector)');
  return {
    top: all.slice(0, count).map((e) => ({
      name: e.name,
      where: e.where,
      selfMs: e.us / 1000,
      selfPercent: totalUs > 0 ? (100 * e.us) / totalUs : 0,
    })),
    totalMs: totalUs / 1000,
    gcMs: (gc?.us ?? 0) / 1000,
  };
}

export interface FunctionBeside {
  name: string;
  where: string;
  /** Self ms per 1,000,000 transactions in each profile. */
  pushdrainMs: number;
  limitMs: number;
}

/**
 * Two profiles function by function, each scaled to 1,000,000 transactions: the functions whose
 * self time differs most first, so what pushdrain spends beyond the limit's work leads.
 */
export function besideLimit(
  pushdrain: { file: string; transactions: number },
  limit: { file: string; transactions: number },
  count: number,
  repoRoot: string,
): { rows: FunctionBeside[]; pushdrainMs: number; limitMs: number } {
  const p = selfTimes(pushdrain.file, repoRoot);
  const l = selfTimes(limit.file, repoRoot);
  const perM = (us: number, tx: number): number => (tx > 0 ? ((us / 1000) * 1e6) / tx : 0);
  const rows = new Map<string, FunctionBeside>();
  const row = (e: SelfTime): FunctionBeside => {
    const key = `${e.name}@${e.where}`;
    const r = rows.get(key) ?? { name: e.name, where: e.where, pushdrainMs: 0, limitMs: 0 };
    rows.set(key, r);
    return r;
  };
  for (const e of p.all) row(e).pushdrainMs += perM(e.us, pushdrain.transactions);
  for (const e of l.all) row(e).limitMs += perM(e.us, limit.transactions);
  return {
    rows: [...rows.values()]
      .sort((a, b) => Math.abs(b.pushdrainMs - b.limitMs) - Math.abs(a.pushdrainMs - a.limitMs))
      .slice(0, count),
    pushdrainMs: perM(p.totalUs, pushdrain.transactions),
    limitMs: perM(l.totalUs, limit.transactions),
  };
}
