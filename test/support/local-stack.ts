/**
 * The local stack as `npm start` runs it, for tests that drive the app from outside (the CLI,
 * the browser): Azurite, the development broker and the local host as a child process, on free
 * ports and a fresh name prefix. Plus a runner for the real `pushdrain` binary.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';

import { type Azurite, startAzurite } from '../../local/azurite';
import { findRepoRoot } from '../../local/host/registry';
import { type BrokerHarness, startTestBroker } from './broker';
import { type HostProcess, startHostProcess } from './host-process';
import { uniquePrefix } from './storage';

export interface LocalStack {
  azurite: Azurite;
  bus: BrokerHarness;
  host: HostProcess;
  prefix: string;
  stop(): Promise<void>;
}

export async function startLocalStack(env: Record<string, string> = {}): Promise<LocalStack> {
  const prefix = uniquePrefix();
  const [azurite, bus] = await Promise.all([startAzurite(), startTestBroker()]);
  const host = await startHostProcess({
    StorageConnection: azurite.connectionString,
    ServiceBusConnection: bus.broker.connectionString,
    PUSHDRAIN_NAME_PREFIX: prefix,
    // Far in the future: nothing runs unless an event arrives.
    PUSHDRAIN_SWEEP_SCHEDULE: '0 0 0 1 1 *',
    ...env,
  });
  return {
    azurite,
    bus,
    host,
    prefix,
    stop: async () => {
      await host.stop();
      await bus.close();
      await azurite.stop();
    },
  };
}

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export const REPO_ROOT = findRepoRoot(__dirname);
export const CLI = join(REPO_ROOT, 'cli', 'pushdrain.js');

/** Runs the real binary as a child, with pipes (not a terminal), bounded in time. */
export function runCli(args: readonly string[], env: Record<string, string> = {}, timeoutMs = 180_000): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: REPO_ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`pushdrain ${args.join(' ')} did not finish in ${timeoutMs} ms\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
