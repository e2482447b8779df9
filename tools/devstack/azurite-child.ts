/**
 * Runs Azurite in a child process of `npm start`, in its own process group: a terminal's Ctrl-C,
 * or a kill of `npm start`'s group, reaches only the parent. When the IPC channel to the parent
 * closes (the parent exited or was killed), Azurite shuts down gracefully and the child exits
 * once every database is closed, so no orphan keeps the ports.
 *
 * With a data folder it also saves before it answers (azurite-durable.ts), and leaves its pid
 * in the folder until it exits, so the next start waits for it instead of racing its last save.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

import { AZURITE_PID_FILE } from './azurite';
import { installDurableSaves } from './azurite-durable';

/** A shutdown that takes longer than this is cut short (every answered write is already on disk). */
const SHUTDOWN_GRACE_MS = 30_000;

function main(): void {
  const [script, ...args] = process.argv.slice(2);
  if (!script) throw new Error('usage: azurite-child <azurite.js> [args…]');
  const at = args.indexOf('--location');
  const location = at >= 0 ? args[at + 1] : undefined;

  // The parent's pipes die with it. Azurite logs as it shuts down, and an unhandled EPIPE used to
  // kill it there, before it saved its databases: the cause of writes lost after a kill.
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined);
  process.on('disconnect', () => {
    for (const stream of [process.stdout, process.stderr]) stream.write = () => true;
    if (!location) process.exit(0); // in memory: nothing to save
    process.kill(process.pid, 'SIGTERM'); // Azurite's own handler: close the servers, save the databases
    setTimeout(() => process.exit(0), SHUTDOWN_GRACE_MS).unref();
  });
  if (location) {
    installDurableSaves(require.resolve('lokijs', { paths: [dirname(script)] }), () => process.exit(0));
    const pidFile = join(location, AZURITE_PID_FILE);
    writeFileSync(pidFile, `${process.pid}\n`);
    process.on('exit', () => rmSync(pidFile, { force: true }));
  }
  process.argv = [process.argv[0] as string, script, ...args];
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  require(script);
}

main();
