/**
 * The local stack as `npm start` runs it, for tests that drive the app from outside (the CLI,
 * the browser): Azurite, the development broker and the local host as a child process, on free
 * ports and a fresh name prefix. Plus a runner for the real `pushdrain` binary.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';

import { TOPIC } from '../../shared/names';
import type { StatusReport } from '../../shared/status/status-report';
import { type Azurite, startAzurite } from '../../tools/devstack/azurite';
import { findRepoRoot } from '../../tools/devstack/host/registry';
import type { BrokerOptions } from '../../tools/devstack/servicebus/broker';
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

/** `broker`: the development broker's options (a test may add a subscription of its own, say). */
export async function startLocalStack(
  env: Record<string, string> = {},
  broker: BrokerOptions = {},
): Promise<LocalStack> {
  const prefix = uniquePrefix();
  const [azurite, bus] = await Promise.all([startAzurite(), startTestBroker(broker)]);
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

/** Any key works locally; tests send one all the same, as a client in Azure must. */
export const LOCAL_KEY = 'any-key-works-locally';

export async function statusOf(stack: LocalStack): Promise<StatusReport> {
  const res = await fetch(`${stack.host.base}/api/ops/status`, { headers: { 'x-functions-key': LOCAL_KEY } });
  if (res.status !== 200) throw new Error(`status: HTTP ${res.status}: ${await res.text()}`);
  return (await res.json()) as StatusReport;
}

/** Waits until no drain runs in the host: a live drain takes new work without any event. */
export async function waitQuiet(stack: LocalStack, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let i = 0; Date.now() < deadline && i < 10_000; i++) {
    if ((await statusOf(stack)).drains.running === 0) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`drains still running after ${timeoutMs} ms`);
}

/**
 * POSTs a batch while the broker refuses every send: the chunks are queued and the batch
 * accepted, but no WorkDetected event is delivered until `wake` sends one.
 */
export async function submitHeld(stack: LocalStack, ndjson: Buffer): Promise<{ batchId: string; chunks: number }> {
  await waitQuiet(stack);
  stack.bus.broker.faults.serverBusy(1000);
  try {
    const res = await fetch(`${stack.host.base}/api/batches`, {
      method: 'POST',
      body: ndjson,
      headers: { 'Content-Type': 'application/x-ndjson', 'x-functions-key': LOCAL_KEY },
    });
    if (res.status !== 202) throw new Error(`submit: HTTP ${res.status}: ${await res.text()}`);
    return (await res.json()) as { batchId: string; chunks: number };
  } finally {
    stack.bus.broker.faults.reset();
  }
}

/** Delivers WorkDetected for these queues, as ingest would have. */
export async function wake(
  stack: LocalStack,
  queues: readonly string[],
  role: 'input' | 'output' = 'input',
): Promise<void> {
  const sender = stack.bus.client().createSender(TOPIC);
  try {
    await sender.sendMessages(
      queues.map((queueName) => ({
        body: { storageAccount: 'devstoreaccount1', queueName, payloadSize: 1, role },
        applicationProperties: { role },
      })),
    );
  } finally {
    await sender.close();
  }
}

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export const REPO_ROOT = findRepoRoot(__dirname);
export const CLI = join(REPO_ROOT, 'tools', 'cli', 'pushdrain.js');

/** Runs the real binary as a child, with pipes (not a terminal), bounded in time. */
export function runCli(
  args: readonly string[],
  env: Record<string, string> = {},
  timeoutMs = 180_000,
  stdin?: Buffer,
): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...env },
      stdio: [stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    });
    child.stdin?.end(stdin);
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
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
