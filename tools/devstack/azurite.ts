/**
 * Starts the real Storage emulator (the `azurite` npm package) as a child process, on free
 * ports unless told otherwise, and hands back a connection string for exactly those ports.
 * With a data folder, every write it answers is on disk (see azurite-durable.ts), and a start
 * first waits for a previous Azurite on the same folder to finish saving and exit.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

import { processRunning } from './process-alive';

export interface AzuriteOptions {
  /** Folder for persisted data; omit for in-memory storage (tests). */
  location?: string;
  blobPort?: number;
  queuePort?: number;
  /** Give up waiting for the listeners after this long. @defaultValue 30000 */
  startTimeoutMs?: number;
  /** Extra environment for Azurite, e.g. `AZURITE_ACCOUNTS=name:base64key` for a custom account. @defaultValue none */
  env?: Record<string, string>;
  /** Progress lines (waiting for a previous Azurite). @defaultValue silent */
  log?: (line: string) => void;
  /** How long to wait for a previous Azurite on the same folder to save and exit before killing it. @defaultValue 20000 */
  previousExitWaitMs?: number;
}

/** Written by the Azurite child into its data folder; removed when it exits. */
export const AZURITE_PID_FILE = 'azurite.pid';

const PREVIOUS_EXIT_WAIT_MS = 20_000;
/** How long stop() waits for the graceful shutdown (which saves the databases) before SIGKILL. */
const STOP_GRACE_MS = 15_000;

export interface Azurite {
  readonly blobPort: number;
  readonly queuePort: number;
  readonly connectionString: string;
  /** The child's process id (tests kill it to prove what a crash keeps). */
  readonly pid: number;
  /** Called once if the child exits by itself (a crash, a kill); never after stop(). */
  onExit(listener: (exit: { code: number | null; signal: NodeJS.Signals | null }) => void): void;
  stop(): Promise<void>;
}

/** Azurite's documented development account; its key is public, not a secret. */
export const DEV_ACCOUNT = 'devstoreaccount1';
const DEV_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

export function azuriteConnectionString(blobPort: number, queuePort: number): string {
  return (
    `DefaultEndpointsProtocol=http;AccountName=${DEV_ACCOUNT};AccountKey=${DEV_KEY};` +
    `BlobEndpoint=http://127.0.0.1:${blobPort}/${DEV_ACCOUNT};QueueEndpoint=http://127.0.0.1:${queuePort}/${DEV_ACCOUNT};`
  );
}

function azuriteScript(): string {
  return join(dirname(require.resolve('azurite/package.json')), 'dist', 'src', 'azurite.js');
}

export async function startAzurite(options: AzuriteOptions = {}): Promise<Azurite> {
  if (options.location) {
    await waitForPrevious(
      options.location,
      options.previousExitWaitMs ?? PREVIOUS_EXIT_WAIT_MS,
      options.log ?? ((): void => undefined),
    );
  }
  const args = [
    azuriteScript(),
    '--blobPort',
    String(options.blobPort ?? 0),
    '--queuePort',
    String(options.queuePort ?? 0),
    '--tablePort',
    '0',
  ];
  args.push('--skipApiVersionCheck', '--loose', '--disableTelemetry');
  if (options.location) args.push('--location', options.location);
  else args.push('--inMemoryPersistence');
  const child = spawn(process.execPath, [join(__dirname, 'azurite-child.js'), ...args], {
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    cwd: options.location ?? process.cwd(),
    env: { ...process.env, ...options.env },
    detached: true,
  });
  const ports = await waitForPorts(child, options.startTimeoutMs ?? 30_000);
  // The child must not keep this process alive: when we exit, the IPC channel closes and it follows.
  child.unref();
  child.channel?.unref();
  return {
    ...ports,
    connectionString: azuriteConnectionString(ports.blobPort, ports.queuePort),
    // In-memory data dies with the process anyway; a persisted store gets a graceful close.
    stop: () => stopChild(child, options.location ? 'SIGTERM' : 'SIGKILL'),
    pid: child.pid ?? 0,
    onExit: (listener) => {
      if (child.exitCode !== null || child.signalCode !== null)
        listener({ code: child.exitCode, signal: child.signalCode });
      else child.once('exit', (code, signal) => listener({ code, signal }));
    },
  };
}

function waitForPorts(child: ChildProcess, timeoutMs: number): Promise<{ blobPort: number; queuePort: number }> {
  return new Promise((resolve, reject) => {
    let out = '';
    let blobPort: number | undefined;
    let queuePort: number | undefined;
    const timer = setTimeout(
      () => fail(new Error(`Azurite did not start within ${timeoutMs} ms:\n${out.slice(-2000)}`)),
      timeoutMs,
    );
    const fail = (e: Error): void => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(e);
    };
    const onData = (d: Buffer): void => {
      out += d.toString();
      blobPort ??= portOf(out, 'Blob');
      queuePort ??= portOf(out, 'Queue');
      if (blobPort !== undefined && queuePort !== undefined) {
        clearTimeout(timer);
        child.stdout?.off('data', onData);
        child.stdout?.resume(); // keep draining so the child never blocks on a full pipe
        child.stderr?.resume();
        resolve({ blobPort, queuePort });
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
    child.once('exit', (code) => fail(startFailure(code, out)));
  });
}

/** A port already taken is named, with the port, so the launcher can name the setting to change. */
function startFailure(code: number | null, out: string): Error {
  const inUse = /EADDRINUSE[^\n]*?:(\d+)\b/.exec(out);
  if (inUse?.[1]) {
    const port = Number(inUse[1]);
    return Object.assign(new Error(`Azurite cannot listen on port ${port}: it is already in use`), {
      code: 'EADDRINUSE',
      port,
    });
  }
  return new Error(`Azurite exited with code ${code}:\n${out.slice(-2000)}`);
}

/**
 * A previous Azurite on this folder may still be saving (its parent was killed a moment ago).
 * Starting next to it would load its databases before that last save, and overwrite it later.
 */
async function waitForPrevious(location: string, waitMs: number, log: (line: string) => void): Promise<void> {
  const file = join(location, AZURITE_PID_FILE);
  const pid = existsSync(file) ? Number(readFileSync(file, 'utf8').trim()) : NaN;
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid || !isAzuriteChild(pid)) return;
  log(`Waiting for the previous Azurite (pid ${pid}) to finish saving ${location}…`);
  const deadline = Date.now() + waitMs;
  while (isAzuriteChild(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  if (!isAzuriteChild(pid)) return;
  log(
    `The previous Azurite (pid ${pid}) did not exit within ${waitMs / 1000} s: killing it (every write it answered is on disk).`,
  );
  process.kill(pid, 'SIGKILL');
  for (let i = 0; i < 50 && isAzuriteChild(pid); i++) await new Promise((r) => setTimeout(r, 100));
}

/** Alive and, where /proc tells, really an Azurite child (a pid may have been reused). */
function isAzuriteChild(pid: number): boolean {
  return processRunning(pid, (cmdline) => cmdline.includes('azurite-child'));
}

function portOf(text: string, service: string): number | undefined {
  const m = new RegExp(`${service} service is successfully listening at http://[^:]+:(\\d+)`).exec(text);
  return m?.[1] ? Number(m[1]) : undefined;
}

function stopChild(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  // Hold the event loop open until the child is gone (it was unref'd while running).
  child.ref();
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
    child.removeAllListeners('exit');
    child.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill(signal);
  });
}
