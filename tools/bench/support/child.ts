/**
 * Runs one bench job in a child process (dist/tools/bench/worker.js): a clean heap, its own CPU
 * account and RSS, and optionally a CPU profile. The job and its result travel over IPC.
 */
import { fork, type Serializable } from 'node:child_process';
import { join } from 'node:path';

/** @azure/functions announces, at import, that it is not inside a Functions worker: expected here. */
const NOISE = /^WARNING: (Skipping call to register|Failed to detect the Azure Functions runtime)/;

export interface ChildOptions {
  timeoutMs: number;
  /** Extra node flags, e.g. a heap limit. */
  execArgv?: string[];
}

export function runChild<R>(job: Serializable, options: ChildOptions): Promise<R> {
  return new Promise<R>((resolve, reject) => {
    const child = fork(join(__dirname, '..', 'worker.js'), [], {
      stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
      execArgv: options.execArgv ?? [],
    });
    child.stderr?.setEncoding('utf8');
    let partial = '';
    child.stderr?.on('data', (d: string) => {
      const lines = (partial + d).split('\n');
      partial = lines.pop() ?? '';
      for (const l of lines) if (!NOISE.test(l)) process.stderr.write(`${l}\n`);
    });
    let result: { ok: true; value: R } | { ok: false; error: string } | undefined;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`bench child timed out after ${options.timeoutMs} ms`));
    }, options.timeoutMs);
    child.on('message', (m) => (result = m as typeof result));
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (result?.ok) resolve(result.value);
      else reject(new Error(result ? result.error : `bench child exited with ${signal ?? code} before answering`));
    });
    child.send(job);
  });
}
