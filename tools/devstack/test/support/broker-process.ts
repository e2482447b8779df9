/**
 * The development broker as its own process (`dist/tools/devstack/servicebus/main.js`, its CLI, or the
 * secondary's, `dist/tools/devstack/secondary-broker.js`), so a
 * test can SIGKILL it: no shutdown hook, no final flush, exactly what a crash leaves behind.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

import { findRepoRoot } from '../../host/registry';

export interface BrokerProcess {
  readonly port: number;
  readonly connectionString: string;
  /** Everything it printed, all incarnations. */
  output(): string;
  /** SIGKILL and wait for the exit. */
  kill(): Promise<void>;
  /** SIGTERM and wait for a clean exit. */
  stop(): Promise<void>;
  /** Starts it again on the same data folder (on a new free port). */
  restart(): Promise<void>;
}

/** Which broker CLI: the primary's, or the secondary namespace's (`tools/devstack/secondary-broker.ts`, backlog queues only). */
export type BrokerRole = 'primary' | 'secondary';

const CLI: Record<BrokerRole, { script: string[]; port: string; data: string }> = {
  primary: {
    script: ['tools', 'devstack', 'servicebus', 'main.js'],
    port: 'SERVICEBUS_PORT',
    data: 'SERVICEBUS_DATA_DIR',
  },
  secondary: {
    script: ['tools', 'devstack', 'secondary-broker.js'],
    port: 'SERVICEBUS_SECONDARY_PORT',
    data: 'SERVICEBUS_SECONDARY_DATA_DIR',
  },
};

export async function startBrokerProcess(
  dataDir: string,
  role: BrokerRole = 'primary',
  startTimeoutMs = 20_000,
): Promise<BrokerProcess> {
  const cli = CLI[role];
  const root = findRepoRoot(__dirname);
  let out = '';
  let child: ChildProcess | undefined;
  let port = 0;
  const launch = async (): Promise<void> => {
    const mark = out.length;
    const c = spawn(process.execPath, [join(root, 'dist', ...cli.script)], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, [cli.port]: '0', [cli.data]: dataDir },
    });
    child = c;
    c.stdout?.on('data', (d: Buffer) => (out += d.toString()));
    c.stderr?.on('data', (d: Buffer) => (out += d.toString()));
    const deadline = Date.now() + startTimeoutMs;
    for (let i = 0; Date.now() < deadline && i < 10_000; i++) {
      const m = /broker on port (\d+)/.exec(out.slice(mark));
      if (m?.[1]) {
        port = Number(m[1]);
        return;
      }
      if (c.exitCode !== null) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    c.kill('SIGKILL');
    throw new Error(`the broker process did not start:\n${out.slice(-3000)}`);
  };
  const exited = (c: ChildProcess): Promise<void> =>
    c.exitCode !== null || c.signalCode !== null ? Promise.resolve() : new Promise((r) => c.once('exit', () => r()));
  const signal = async (sig: NodeJS.Signals): Promise<void> => {
    if (!child) return;
    const c = child;
    c.kill(sig);
    await exited(c);
  };
  await launch();
  return {
    get port() {
      return port;
    },
    get connectionString() {
      return `Endpoint=sb://localhost:${port};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true;`;
    },
    output: () => out,
    kill: () => signal('SIGKILL'),
    stop: () => signal('SIGTERM'),
    restart: launch,
  };
}
