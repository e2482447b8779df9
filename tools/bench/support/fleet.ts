/** Starting and stopping groups of apps with unique names, and the little waits scenarios share. */
import type { BenchApp, DesignName } from '../app';
import { startApp } from '../designs';
import { CompletionWatcher } from './completion';
import { type BenchEnv, removeApp } from './env';

const SHORT: Record<DesignName, string> = {
  pushdrain: 'pd',
  'classic-poller': 'cp',
  'functions-queue': 'fq',
  'no-claim-check': 'nc',
};

let counter = 0;
const runTag = Date.now().toString(36).slice(-5);

/** A fresh name prefix: queue and container names of different apps never collide. */
export function freshPrefix(design: DesignName): string {
  return `b${runTag}-${SHORT[design]}${++counter}-`;
}

export interface FleetApp {
  app: BenchApp;
  watcher: CompletionWatcher;
  prefix: string;
  topic?: string;
}

export interface StartOptions {
  idleMs?: number;
  random?: () => number;
  meter?: BenchApp['meter'];
  settings?: Record<string, string>;
  withoutBatchEvents?: boolean;
}

export async function startFleetApp(env: BenchEnv, design: DesignName, options: StartOptions = {}): Promise<FleetApp> {
  const prefix = freshPrefix(design);
  const topic = design === 'pushdrain' ? env.takeTopic() : undefined;
  const app = await startApp(design, {
    prefix,
    storage: env.azurite.connectionString,
    ...(topic ? { serviceBus: { connectionString: env.broker.connectionString, topic } } : {}),
    ...options,
  });
  return { app, watcher: new CompletionWatcher(app.settings), prefix, ...(topic ? { topic } : {}) };
}

export async function stopFleetApp(env: BenchEnv, f: FleetApp): Promise<void> {
  await f.app.stop();
  await f.watcher.close();
  await removeApp(env.admin, f.prefix);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * Waits until an app's storage meter has not moved for `quietMs` (its drains or back-off have
 * run out), at most `maxMs`. Returns how long that took.
 */
export async function untilQuiet(app: BenchApp, quietMs: number, maxMs: number): Promise<number> {
  const start = Date.now();
  let last = app.meter.total();
  let since = Date.now();
  // Bounded by maxMs; checks every 100 ms.
  while (Date.now() - start < maxMs) {
    await sleep(100);
    const now = app.meter.total();
    if (now !== last) {
      last = now;
      since = Date.now();
    } else if (Date.now() - since >= quietMs) break;
  }
  return Date.now() - start;
}
