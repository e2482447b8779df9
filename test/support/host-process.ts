/**
 * The local host as a child process (`dist/local/start.js`), as `npm start` runs it against
 * given connections. Tests can kill it hard (SIGKILL) and start it again on the same port.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

import { findRepoRoot } from '../../local/host/registry';

export interface HostProcess {
  readonly base: string;
  readonly port: number;
  /** Everything the host printed since it started (all its incarnations). */
  output(): string;
  /** SIGKILL: no shutdown hook runs, in-flight work is simply lost. */
  kill(): Promise<void>;
  /** Starts it again with the same settings and port. */
  restart(): Promise<void>;
  /** SIGINT and wait for a clean exit; resolves with the exit code. */
  stop(timeoutMs?: number): Promise<number | null>;
  readonly kills: number;
}

export async function startHostProcess(env: Record<string, string>, port = 0, startTimeoutMs = 30_000): Promise<HostProcess> {
  const root = findRepoRoot(__dirname);
  let out = '';
  let child: ChildProcess | undefined;
  let actualPort = port;
  let kills = 0;
  const launch = async (): Promise<void> => {
    const mark = out.length;
    const c = spawn(process.execPath, [join(root, 'dist', 'local', 'start.js')], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...env, PORT: String(actualPort) },
    });
    child = c;
    c.stdout?.on('data', (d: Buffer) => (out += d.toString()));
    c.stderr?.on('data', (d: Buffer) => (out += d.toString()));
    const deadline = Date.now() + startTimeoutMs;
    for (let i = 0; Date.now() < deadline && i < 10_000; i++) {
      const m = /HTTP\s+http:\/\/localhost:(\d+)\/api/.exec(out.slice(mark));
      if (m?.[1]) {
        actualPort = Number(m[1]);
        return;
      }
      if (c.exitCode !== null) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`the local host did not start:\n${out.slice(-3000)}`);
  };
  const exited = (c: ChildProcess): Promise<number | null> =>
    c.exitCode !== null || c.signalCode !== null ? Promise.resolve(c.exitCode) : new Promise((r) => c.once('exit', (code) => r(code)));
  await launch();
  return {
    get base() {
      return `http://localhost:${actualPort}`;
    },
    get port() {
      return actualPort;
    },
    get kills() {
      return kills;
    },
    output: () => out,
    kill: async () => {
      if (!child) return;
      kills++;
      const c = child;
      c.kill('SIGKILL');
      await exited(c);
    },
    restart: launch,
    stop: async (timeoutMs = 20_000) => {
      if (!child || child.exitCode !== null || child.signalCode !== null) return child?.exitCode ?? null;
      const c = child;
      c.kill('SIGINT');
      let timer: NodeJS.Timeout | undefined;
      const code = await Promise.race([exited(c), new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), timeoutMs)))]);
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
