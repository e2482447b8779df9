/**
 * `npm start -- --secondary` (or SERVICEBUS_SECONDARY=1): a second development broker as the
 * secondary namespace, serving PUSHDRAIN_BACKLOG_QUEUE_COUNT backlog queues, so the publisher
 * can fail over and the syphon functions are registered. Without the flag nothing starts and
 * the feature stays off; a ServiceBusSecondaryConnection already set is used as it is.
 *
 * It keeps a journal as the primary does (in `.servicebus-secondary/`): a backlog queue holds
 * what the primary could not take, so losing it on a restart would lose acknowledged work.
 * `node dist/tools/devstack/secondary-broker.js` runs it alone (to try a failover, or to kill it).
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';

import { backlogQueueCount, SECONDARY_CONNECTION } from '../../shared/config/settings';
import { type Broker, startBroker } from './servicebus/broker';
import { portFromEnv } from './servicebus/main';
import { backlogEntities } from './servicebus/secondary';
import { isSet } from './setting';
import { stopOnSignal } from './stop-on-signal';

export const SECONDARY_FLAG = '--secondary';
export const SECONDARY_DATA_FOLDER = '.servicebus-secondary';
export const DEFAULT_SECONDARY_PORT = 5673;

export function secondaryAsked(env: NodeJS.ProcessEnv, argv: readonly string[]): boolean {
  // Not strict: npm start's other flags (--instances) are read by the part they start.
  const { secondary } = parseArgs({
    args: [...argv],
    options: { secondary: { type: 'boolean' } },
    strict: false,
    allowPositionals: true,
  }).values;
  return secondary === true || env.SERVICEBUS_SECONDARY === '1';
}

/** SERVICEBUS_SECONDARY_DATA_DIR, else `.servicebus-secondary/` in `dataRoot`; `memory` for none. */
export function secondaryDataDir(env: NodeJS.ProcessEnv, dataRoot: string): string | undefined {
  const value = env.SERVICEBUS_SECONDARY_DATA_DIR?.trim();
  if (!value) return resolve(dataRoot, SECONDARY_DATA_FOLDER);
  if (value.toLowerCase() === 'memory') return undefined;
  return resolve(value);
}

export interface SecondaryOptions {
  env: NodeJS.ProcessEnv;
  port: number;
  /** Where `.servicebus-secondary/` goes (PUSHDRAIN_DATA_DIR or the repo root). */
  dataRoot: string;
}

/** The secondary broker, durable unless SERVICEBUS_SECONDARY_DATA_DIR=memory. */
export function startSecondaryBroker({ env, port, dataRoot }: SecondaryOptions): Promise<Broker> {
  return startBroker({
    port,
    entities: backlogEntities(backlogQueueCount(env)),
    dataDir: secondaryDataDir(env, dataRoot),
    onFatal: (err) => {
      // Stop rather than acknowledge a backlog message that is not on disk.
      console.error(
        `pushdrain: the secondary broker cannot write its journal (${err.message}); stopping so nothing unsaved is acknowledged.`,
      );
      process.exit(1);
    },
  });
}

/** Starts it when asked and no secondary is configured; sets ServiceBusSecondaryConnection for the host. */
export async function startSecondaryIfAsked(
  argv: readonly string[],
  options: SecondaryOptions,
): Promise<Broker | undefined> {
  const { env } = options;
  if (!secondaryAsked(env, argv) || isSet(env, SECONDARY_CONNECTION)) return undefined;
  const broker = await startSecondaryBroker(options);
  env[SECONDARY_CONNECTION] = broker.connectionString;
  return broker;
}

async function main(): Promise<void> {
  const env = process.env;
  const port = portFromEnv(env.SERVICEBUS_SECONDARY_PORT, 'SERVICEBUS_SECONDARY_PORT', DEFAULT_SECONDARY_PORT);
  const broker = await startSecondaryBroker({ env, port, dataRoot: resolve(env.PUSHDRAIN_DATA_DIR ?? '') });
  console.log(`Secondary development Service Bus broker on port ${broker.port}`);
  console.log(broker.connectionString);
  stopOnSignal(
    (signal) => `${signal}: stopping the secondary broker`,
    () => broker.stop(),
  );
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
