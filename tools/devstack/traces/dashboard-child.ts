/**
 * Runs the Aspire dashboard for `npm start -- --traces` as a grandchild, with this process between
 * them in its own process group: the dashboard is a native program that cannot see its parent
 * die, so this process watches the IPC channel to `npm start` instead. When it closes (a clean
 * stop, or `npm start` killed outright) or a SIGTERM comes, the dashboard is stopped (SIGTERM, then
 * SIGKILL after a grace) and this process exits with it: no dashboard outlives the stack.
 */
import { spawn } from 'node:child_process';

/** The dashboard stops in about a second; one that hangs is killed after this. */
const STOP_GRACE_MS = 10_000;

function main(): void {
  const exe = process.argv[2];
  if (!exe) throw new Error('usage: dashboard-child <Aspire.Dashboard>');
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined);
  const dashboard = spawn(exe, [], { stdio: ['ignore', 'inherit', 'inherit'] });
  dashboard.on('error', (e) => {
    console.error(`the Aspire dashboard did not start: ${e.message}`);
    process.exit(1);
  });
  dashboard.on('exit', (code, signal) => process.exit(code ?? (signal ? 0 : 1)));
  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    dashboard.kill('SIGTERM');
    setTimeout(() => dashboard.kill('SIGKILL'), STOP_GRACE_MS).unref();
  };
  process.on('disconnect', stop);
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main();
