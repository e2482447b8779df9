/**
 * A CPU hog: one busy process per core, beside the fleet, so that an instance is starved the
 * same way on any machine (on Azure: a throttled instance, a noisy neighbour). Each process
 * spins for at most `maxMs` on its own, so a bench that dies leaves nothing spinning for long;
 * stop() ends them sooner.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';

export interface CpuHog {
  readonly processes: number;
  stop(): Promise<void>;
}

export function startCpuHog(maxMs: number, processes = availableParallelism()): CpuHog {
  const spin = `const end = Date.now() + ${Math.max(0, Math.round(maxMs))}; while (Date.now() < end);`;
  const children: ChildProcess[] = [];
  for (let i = 0; i < processes; i++) children.push(spawn(process.execPath, ['-e', spin], { stdio: 'ignore' }));
  const killAll = (): void => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  };
  process.once('exit', killAll);
  return {
    processes,
    stop: async () => {
      const exited = children.map((c) =>
        c.exitCode !== null || c.signalCode !== null
          ? Promise.resolve()
          : new Promise<void>((r) => c.once('exit', () => r())),
      );
      killAll();
      await Promise.all(exited);
      process.off('exit', killAll);
    },
  };
}
