/**
 * `npm start -- --secondary` (or SERVICEBUS_SECONDARY=1): a second development broker as the
 * secondary namespace, serving PUSHDRAIN_BACKLOG_QUEUE_COUNT backlog queues, so the publisher
 * can fail over and the syphon functions are registered. Without the flag nothing starts and
 * the feature stays off; a ServiceBusSecondaryConnection already set is used as it is.
 */
import { parseArgs } from 'node:util';

import { backlogQueueCount, SECONDARY_CONNECTION } from '../../shared/config/settings';
import { type Broker, startBroker } from './servicebus/broker';
import { backlogEntities } from './servicebus/secondary';
import { isSet } from './setting';

export function secondaryAsked(env: NodeJS.ProcessEnv, argv: readonly string[]): boolean {
  // Not strict: npm start's other flags (--instances) are read by the part they start.
  const { secondary } = parseArgs({ args: [...argv], options: { secondary: { type: 'boolean' } }, strict: false, allowPositionals: true }).values;
  return secondary === true || env.SERVICEBUS_SECONDARY === '1';
}

/** Starts it when asked and no secondary is configured; sets ServiceBusSecondaryConnection for the host. */
export async function startSecondaryIfAsked(env: NodeJS.ProcessEnv, argv: readonly string[], port: number): Promise<Broker | undefined> {
  if (!secondaryAsked(env, argv) || isSet(env, SECONDARY_CONNECTION)) return undefined;
  const broker = await startBroker({ port, entities: backlogEntities(backlogQueueCount(env)) });
  env[SECONDARY_CONNECTION] = broker.connectionString;
  return broker;
}
