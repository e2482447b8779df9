/**
 * CLI: `node dist/tools/devstack/servicebus/main.js` starts the development broker on SERVICEBUS_PORT
 * (default 5672) with infra/servicebus-entities.json, its journal in SERVICEBUS_DATA_DIR
 * (default `.servicebus/` at the repo root; `memory` for none), and prints the connection
 * string. Ctrl-C (or SIGTERM) stops it cleanly; a kill loses nothing it acknowledged.
 */
import { dirname, resolve } from 'node:path';

import { stopOnSignal } from '../stop-on-signal';
import { startBroker } from './broker';
import { findEntitiesFile } from './config';

export const DEFAULT_PORT = 5672;
export const DATA_FOLDER = '.servicebus';

/** The journal folder, or undefined for an in-memory broker (`memory`). Relative paths are from the working directory. */
export function dataDirFromEnv(value: string | undefined, defaultRoot: string): string | undefined {
  if (value === undefined || value.trim() === '') return resolve(defaultRoot, DATA_FOLDER);
  if (value.trim().toLowerCase() === 'memory') return undefined;
  return resolve(value.trim());
}

/** A broker's port setting (SERVICEBUS_PORT, or the secondary's): unset is the default; anything else must be a TCP port. */
export function portFromEnv(
  value: string | undefined,
  setting = 'SERVICEBUS_PORT',
  defaultPort = DEFAULT_PORT,
): number {
  if (value === undefined || value === '') return defaultPort;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new Error(`Invalid setting ${setting}: "${value}" is not a TCP port (0-65535)`);
  }
  return port;
}

async function main(): Promise<void> {
  const verbose = process.env.SERVICEBUS_BROKER_VERBOSE === '1';
  const broker = await startBroker({
    port: portFromEnv(process.env.SERVICEBUS_PORT),
    dataDir: dataDirFromEnv(process.env.SERVICEBUS_DATA_DIR, dirname(dirname(findEntitiesFile()))),
    log: (line) => verbose && console.log(`[servicebus] ${line}`),
    onFatal: (err) => {
      console.error(`servicebus: journal write failed, stopping so nothing unsaved is acknowledged: ${err.message}`);
      process.exit(1);
    },
  });
  console.log(`Development Service Bus broker on port ${broker.port}`);
  console.log(broker.connectionString);
  stopOnSignal(
    (signal) => `${signal}: stopping the broker`,
    () => broker.stop(),
  );
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
