/**
 * The real Functions queue trigger (tools/bench/peers/webjobs-queue-trigger, WebJobs SDK) as a child
 * process: built once with `dotnet build -c Release` (obj/ and bin/ stay beside the project),
 * started with a storage connection string and a queue prefix, stopped by closing its stdin.
 * It prints `invoked <queue> <message id> <epoch ms>` per invocation.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';

import { findRepoRoot } from '../../devstack/host/registry';

const PEER_DIR = join(findRepoRoot(__dirname), 'tools', 'bench', 'peers', 'webjobs-queue-trigger');
const PEER_DLL = join(PEER_DIR, 'bin', 'Release', 'net10.0', 'WebJobsQueueTrigger.dll');
/** The queues the peer triggers on, after its prefix: the port's four input partitions and results. */
export const PEER_QUEUES = ['work-0', 'work-1', 'work-2', 'work-3', 'results'] as const;
const DOTNET_ENV = {
  ...process.env,
  DOTNET_CLI_TELEMETRY_OPTOUT: '1',
  DOTNET_NOLOGO: '1',
  DOTNET_SKIP_FIRST_TIME_EXPERIENCE: '1',
};

interface Invocation {
  queue: string;
  id: string;
  at: number;
}

export interface WebJobsPeer {
  readonly prefix: string;
  invocations(): readonly Invocation[];
  /** Why the peer is not running (its exit code or signal), or undefined while it runs. */
  exited(): string | undefined;
  /** The end of what the peer wrote to stderr (its host's warnings). */
  stderrTail(): string;
  stop(): Promise<void>;
}

/** Why the peer cannot run here (no .NET SDK), or undefined. */
export function peerUnavailable(): string | undefined {
  const r = spawnSync('dotnet', ['--version'], { env: DOTNET_ENV, stdio: 'ignore', timeout: 30_000 });
  return r.status === 0 ? undefined : 'the .NET SDK (dotnet) is not installed';
}

/** Builds the peer; returns the build's wall time in ms. */
export function buildPeer(): number {
  const t0 = Date.now();
  const r = spawnSync('dotnet', ['build', '-c', 'Release', '-nologo', '-v', 'q'], {
    cwd: PEER_DIR,
    env: DOTNET_ENV,
    encoding: 'utf8',
    timeout: 10 * 60_000,
  });
  if (r.status !== 0)
    throw new Error(`dotnet build of the WebJobs peer failed:\n${(r.stdout + r.stderr).slice(-3000)}`);
  return Date.now() - t0;
}

export async function startPeer(options: {
  connectionString: string;
  prefix: string;
  startTimeoutMs?: number;
}): Promise<WebJobsPeer> {
  const child: ChildProcess = spawn('dotnet', [PEER_DLL], {
    cwd: PEER_DIR,
    env: { ...DOTNET_ENV, AzureWebJobsStorage: options.connectionString, PEER_PREFIX: options.prefix },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const invocations: Invocation[] = [];
  let ready = false;
  let pending = '';
  let errors = '';
  child.stdout?.on('data', (d: Buffer) => {
    pending += d.toString();
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      if (line.trim() === 'ready') ready = true;
      const m = /^invoked (\S+) (\S+) (\d+)/.exec(line.trim());
      if (m) invocations.push({ queue: m[1]!, id: m[2]!, at: Number(m[3]) });
    }
  });
  child.stderr?.on('data', (d: Buffer) => (errors = (errors + d.toString()).slice(-4000)));
  const deadline = Date.now() + (options.startTimeoutMs ?? 60_000);
  // Bounded by the deadline; the flag is set by the stdout handler above.
  while (!ready && child.exitCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  if (!ready) {
    child.kill('SIGKILL');
    throw new Error(`the WebJobs peer did not start:\n${errors}`);
  }
  const exited = new Promise<void>((r) => (child.exitCode !== null ? r() : child.once('exit', () => r())));
  return {
    prefix: options.prefix,
    invocations: () => invocations,
    exited: () =>
      child.exitCode !== null
        ? `exited with code ${child.exitCode}`
        : child.signalCode !== null
          ? `killed by ${child.signalCode}`
          : undefined,
    stderrTail: () => errors.slice(-1000),
    stop: async () => {
      child.stdin?.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
