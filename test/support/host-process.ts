/**
 * The local host as a child process (`dist/tools/devstack/start.js`), as `npm start` runs it against given
 * connections: this process's environment plus `env` (a setting given as undefined is removed).
 * Tests can kill it hard (SIGKILL) and start it again on the same port.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

import { until } from './poll';
import { portBelowEphemeral } from './port-below-ephemeral';
import { repoRoot } from './repo';

export type HostEnv = Record<string, string | undefined>;

export interface HostProcess {
  /** `http://localhost:<port>`. */
  readonly base: string;
  readonly port: number;
  /** The current incarnation's process id (to read its CPU time, say). */
  readonly pid: number | undefined;
  /** Everything the host printed since it started (all its incarnations). */
  output(): string;
  /** `until`, with the host's last output in the timeout error. */
  until<T>(what: string, timeoutMs: number, probe: () => T | undefined | Promise<T | undefined>): Promise<T>;
  /** SIGKILL: no shutdown hook runs, in-flight work is simply lost. */
  kill(): Promise<void>;
  /** Starts it again with the same settings and port. */
  restart(): Promise<void>;
  /** SIGINT and wait for a clean exit; resolves with the exit code (null: SIGKILL after `timeoutMs`). */
  stop(timeoutMs?: number): Promise<number | null>;
  readonly kills: number;
}

export interface HostProcessOptions {
  /**
   * Its own process group, killed whole: what an OOM kill or a closed terminal does to `npm start`
   * (embedded Azurite, in its own group, outlives it). @defaultValue false (kill() kills the host alone)
   */
  processGroup?: boolean;
  /** The built tree to run (its dist/tools/devstack/start.js, its host.json). @defaultValue this repo */
  root?: string;
  /** Its command line, as after `npm start --`. */
  args?: readonly string[];
}

/** `port` undefined: PORT as `env` (or this process) has it. */
function spawnHost(
  env: HostEnv,
  port: number | undefined,
  onOutput: (text: string) => void,
  options: HostProcessOptions = {},
): ChildProcess {
  const root = options.root ?? repoRoot();
  const child = spawn(
    process.execPath,
    [join(root, 'dist', 'tools', 'devstack', 'start.js'), ...(options.args ?? [])],
    {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...env, ...(port !== undefined ? { PORT: String(port) } : {}) },
      detached: options.processGroup === true,
    },
  );
  for (const stream of [child.stdout, child.stderr]) stream?.on('data', (d: Buffer) => onOutput(d.toString()));
  return child;
}

const exited = (c: ChildProcess): Promise<number | null> =>
  c.exitCode !== null || c.signalCode !== null
    ? Promise.resolve(c.exitCode)
    : new Promise((r) => c.once('exit', (code) => r(code)));

/**
 * Runs a host that should refuse to start: its exit code and all it printed (SIGKILL after
 * `timeoutMs`). PORT is taken from `env` (default 0).
 */
export async function runHostToExit(
  env: HostEnv,
  timeoutMs = 30_000,
  args: readonly string[] = [],
): Promise<{ code: number | null; output: string }> {
  let output = '';
  const child = spawnHost({ PORT: '0', ...env }, undefined, (text) => (output += text), { args });
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const code = await new Promise<number | null>((r) => child.once('close', r)); // 'close': the output is complete
  clearTimeout(timer);
  return { code, output };
}

export async function startHostProcess(
  env: HostEnv,
  port = 0,
  startTimeoutMs = 30_000,
  options: HostProcessOptions = {},
): Promise<HostProcess> {
  let out = '';
  let child: ChildProcess | undefined;
  // Port 0 asks for any port: one below the ephemeral range, so a restart finds it still free.
  let actualPort = port === 0 ? await portBelowEphemeral() : port;
  let kills = 0;
  const context = (): string => `--- host output ---\n${out.slice(-3000)}`;
  const launch = async (): Promise<void> => {
    const mark = out.length;
    const c = (child = spawnHost(env, actualPort, (text) => (out += text), options));
    // 'exit' can come before the last of the output: 'close' is when the pipes are drained. A
    // grandchild holding them (embedded Azurite outlives the host) would keep them open: 2 s at most.
    const closed = (): Promise<void> =>
      new Promise<void>((r) => {
        if (c.stdout?.closed !== false && c.stderr?.closed !== false) return r();
        const timer = setTimeout(r, 2_000);
        c.once('close', () => {
          clearTimeout(timer);
          r();
        });
      });
    actualPort = await until(
      'the local host to listen',
      startTimeoutMs,
      async () => {
        if (c.exitCode !== null || c.signalCode !== null) {
          await closed();
          // This incarnation's own output first: why it stopped is there, not in the last one's.
          throw new Error(
            `the local host exited with ${c.exitCode ?? c.signalCode} at start-up (port ${actualPort}):\n` +
              `${out.slice(mark).slice(-3000) || '(it printed nothing)'}`,
          );
        }
        const m = /HTTP\s+http:\/\/localhost:(\d+)\/api/.exec(out.slice(mark));
        return m?.[1] ? Number(m[1]) : undefined;
      },
      { context },
    );
  };
  for (let attempt = 1; ; attempt++) {
    try {
      await launch();
      break;
    } catch (e) {
      // Between the probe and the host's bind another test file asked for the same random port.
      const taken = port === 0 && /cannot listen on port \d+: it is already in use/.test((e as Error).message);
      if (!taken || attempt >= 3) throw e;
      actualPort = await portBelowEphemeral();
    }
  }
  return {
    get base() {
      return `http://localhost:${actualPort}`;
    },
    get port() {
      return actualPort;
    },
    get pid() {
      return child?.pid;
    },
    get kills() {
      return kills;
    },
    output: () => out,
    until: (what, timeoutMs, probe) => until(what, timeoutMs, probe, { context }),
    kill: async () => {
      if (!child) return;
      kills++;
      const c = child;
      if (options.processGroup && c.pid !== undefined) process.kill(-c.pid, 'SIGKILL');
      else c.kill('SIGKILL');
      await exited(c);
    },
    restart: launch,
    stop: async (timeoutMs = 20_000) => {
      if (!child || child.exitCode !== null || child.signalCode !== null) return child?.exitCode ?? null;
      const c = child;
      c.kill('SIGINT');
      let timer: NodeJS.Timeout | undefined;
      const code = await Promise.race([
        exited(c),
        new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), timeoutMs))),
      ]);
      clearTimeout(timer); // else the test process waits out the full timeout before it can exit
      if (code === 'timeout') {
        c.kill('SIGKILL');
        await exited(c);
        return null;
      }
      return code;
    },
  };
}
