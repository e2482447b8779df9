/**
 * One simulated Functions instance: the local host (`dist/tools/devstack/start.js`) as a child process
 * with external connections, so every instance shares one Azurite and one broker and competes
 * for the same events, as instances of one app do. It reports through its own GET /api/health.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

import { findRepoRoot } from '../host/registry';

/** Set ('1') on an instance added to a running fleet: it skips start-up recovery (local/start.ts). */
export const JOINS_FLEET = 'PUSHDRAIN_LOCAL_JOINS_FLEET';

/** What an instance's GET /api/health says about its drains (shared/drain/coordinator.ts DrainActivity). */
export interface InstanceActivity {
  inProgress: number;
  held: number;
  processed: { map: number; reduce: number };
  fanOutPublished: number;
  /** Absent from an instance of an older build. */
  duplicates?: { map: number; reduce: number };
  leasesLost?: number;
  visibilityExtensions?: number;
  eventLoopDelay?: { p99Ms: number; maxMs: number };
}

export interface InstanceOptions {
  /** Connections and settings; StorageConnection and ServiceBusConnection must be set. */
  env: Record<string, string>;
  /** HTTP port; 0 picks a free one. */
  port: number;
  /** Each output line, prefixed with the instance's name. */
  echo?: (line: string) => void;
  startTimeoutMs?: number;
}

/** Instances of this process: if the fleet exits without stopping them, they are told to stop too. */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of running) c.kill('SIGTERM');
});

export class LocalInstance {
  private child: ChildProcess | undefined;
  private url = '';
  private exited: Promise<number | null> = Promise.resolve(null);
  readonly startedAt = Date.now();

  private constructor(readonly name: string) {}

  static async start(name: string, options: InstanceOptions): Promise<LocalInstance> {
    for (const required of ['StorageConnection', 'ServiceBusConnection']) {
      if (!options.env[required])
        throw new Error(`an instance needs ${required}: it must share the fleet's storage and broker`);
    }
    const instance = new LocalInstance(name);
    await instance.launch(options);
    return instance;
  }

  get baseUrl(): string {
    return this.url;
  }

  /** The host process's id (the bench reads its memory). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  private async launch(options: InstanceOptions): Promise<void> {
    const root = findRepoRoot(__dirname);
    // Its own process group: a terminal's Ctrl-C reaches only the fleet, which then stops each
    // instance once, gracefully (a second signal would force the instance out mid-drain).
    const child = spawn(process.execPath, [join(root, 'dist', 'tools', 'devstack', 'start.js')], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...options.env, PORT: String(options.port) },
      detached: true,
    });
    this.child = child;
    running.add(child);
    child.once('exit', () => running.delete(child));
    this.exited = new Promise((r) => child.once('exit', (code) => r(code)));
    let banner = '';
    let partial = '';
    const onData = (d: Buffer): void => {
      const text = partial + d.toString();
      const lines = text.split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        if (!this.url) banner += `${line}\n`;
        if (line.trim() !== '') options.echo?.(`[${this.name}] ${line}`);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    const deadline = Date.now() + (options.startTimeoutMs ?? 60_000);
    for (let i = 0; Date.now() < deadline && i < 100_000; i++) {
      const m = /HTTP\s+(http:\/\/localhost:\d+)\/api/.exec(banner);
      if (m?.[1]) {
        this.url = m[1];
        return;
      }
      if (child.exitCode !== null) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    child.kill('SIGKILL');
    throw new Error(`instance ${this.name} did not start:\n${banner.slice(-2000)}`);
  }

  /** Its drain activity, or undefined if it does not answer (starting, stopping). */
  async activity(timeoutMs = 2_000): Promise<InstanceActivity | undefined> {
    try {
      const res = await fetch(`${this.url}/api/health`, { signal: AbortSignal.timeout(timeoutMs) });
      if (!res.ok) return undefined;
      return ((await res.json()) as { drains?: InstanceActivity }).drains;
    } catch {
      return undefined;
    }
  }

  /** SIGTERM: drains finish their batch and hand the rest back; SIGKILL after the timeout. */
  async stop(timeoutMs = 30_000): Promise<number | null> {
    const c = this.child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return c?.exitCode ?? null;
    c.kill('SIGTERM');
    // The timer is cleared once the instance exits: left running, it kept the caller's process
    // alive for the whole timeout after the last instance had stopped (26 s of every bench run).
    let timer: NodeJS.Timeout | undefined;
    const code = await Promise.race([
      this.exited,
      new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), timeoutMs))),
    ]).finally(() => clearTimeout(timer));
    if (code !== 'timeout') return code;
    c.kill('SIGKILL');
    return this.exited;
  }
}
