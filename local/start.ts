/**
 * `npm start`: the whole app on one machine. Starts embedded Azurite (persisted under
 * .azurite/) and the development Service Bus broker for whichever connection is not set,
 * then the local host. An already-set StorageConnection / ServiceBusConnection is used
 * as it is, so the same host runs against real Azure.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

import { type Azurite, startAzurite } from './azurite';
import { startLocalHost } from './host/local-host';
import { findRepoRoot } from './host/registry';
import { startSecondaryIfAsked } from './secondary-broker';
import { type Broker, startBroker } from './servicebus/broker';

const env = process.env;

function isSet(name: string): boolean {
  return Object.keys(env).some((k) => (k === name || k.startsWith(`${name}__`)) && (env[k] ?? '') !== '');
}

/** Connection strings of our embedded parts carry only public development keys; anything else is masked. */
function describe(value: string | undefined, embedded: boolean): string {
  if (!value) return '(identity-based)';
  return embedded ? value : value.replace(/(AccountKey|SharedAccessKey|SharedAccessSignature)=[^;]*/gi, '$1=***');
}

function port(name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`${name} must be a port number (0-65535), got "${raw}"`);
  return n;
}

async function main(): Promise<void> {
  const root = findRepoRoot();
  const started = Date.now();
  let azurite: Azurite | undefined;
  let broker: Broker | undefined;
  const embeddedStorage = !isSet('StorageConnection') && !isSet('AzureWebJobsStorage');
  if (embeddedStorage) {
    const location = join(root, '.azurite');
    mkdirSync(location, { recursive: true });
    azurite = await startAzurite({ location, blobPort: port('AZURITE_BLOB_PORT', 10000), queuePort: port('AZURITE_QUEUE_PORT', 10001) });
    env.StorageConnection = azurite.connectionString;
  }
  const embeddedBus = !isSet('ServiceBusConnection');
  if (embeddedBus) {
    broker = await startBroker({ port: port('SERVICEBUS_PORT', 5672) });
    env.ServiceBusConnection = broker.connectionString;
  }
  const secondary = await startSecondaryIfAsked(env, process.argv.slice(2), port('SERVICEBUS_SECONDARY_PORT', 5673));
  env.PUSHDRAIN_SWEEP_SCHEDULE ??= '0 */5 * * * *';

  const host = await startLocalHost({ root, port: port('PORT', 7071) });
  const lines = [
    '',
    `pushdrain is running (${Date.now() - started} ms)`,
    `  HTTP       ${host.http.url}/api  (function keys are not checked locally: any key or none)`,
    ...host.routes.map((r) => `             ${r.methods.join(',').padEnd(5)} ${host.http.url}/${r.template}  [${r.functionName}, auth ${r.authLevel}]`),
    `  Storage    ${embeddedStorage ? `embedded Azurite, data in .azurite/` : `from ${isSet('StorageConnection') ? 'StorageConnection' : 'AzureWebJobsStorage'}`}`,
    `             ${describe(env.StorageConnection, embeddedStorage)}`,
    `  ServiceBus ${embeddedBus ? 'embedded development broker' : 'from ServiceBusConnection'}`,
    `             ${describe(env.ServiceBusConnection, embeddedBus)}`,
    ...(secondary ? [`  Secondary  embedded development broker (backlog queues; npm start -- --secondary)`, `             ${secondary.connectionString}`] : []),
    ...host.serviceBus.listeners.map((l) => `  trigger    ${l.functionName} ← ${l.entity}`),
    ...host.timers.schedules.map((s) => `  timer      ${s.functionName} "${s.expression}", next ${s.next.toISOString()}`),
    'Press Ctrl-C to stop.',
    '',
  ];
  console.log(lines.join('\n'));

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) {
      console.log('Forced exit.');
      process.exit(130);
    }
    stopping = true;
    console.log(`\n${signal}: stopping — drains finish their current batch and hand the rest back…`);
    void (async () => {
      const t0 = Date.now();
      await host.stop();
      const t1 = Date.now();
      await broker?.stop();
      await secondary?.stop();
      const t2 = Date.now();
      await azurite?.stop();
      console.log(`Stopped cleanly (host ${t1 - t0} ms, broker ${t2 - t1} ms, storage ${Date.now() - t2} ms).`);
      process.exit(0);
    })().catch((e: unknown) => {
      console.error(`shutdown failed: ${(e as Error).message}`);
      process.exit(1);
    });
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

main().catch((e: unknown) => {
  console.error(`pushdrain failed to start: ${(e as Error).message}`);
  process.exit(1);
});
