/**
 * CLI: `node dist/local/servicebus/main.js` starts the development broker on SERVICEBUS_PORT
 * (default 5672) with infra/servicebus-entities.json and prints the connection string.
 * Ctrl-C (or SIGTERM) stops it cleanly.
 */
import { startBroker } from './broker';

export const DEFAULT_PORT = 5672;

export function portFromEnv(value: string | undefined): number {
  if (value === undefined || value === '') return DEFAULT_PORT;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new Error(`Invalid setting SERVICEBUS_PORT: "${value}" is not a TCP port (0-65535)`);
  }
  return port;
}

async function main(): Promise<void> {
  const verbose = process.env.SERVICEBUS_BROKER_VERBOSE === '1';
  const broker = await startBroker({
    port: portFromEnv(process.env.SERVICEBUS_PORT),
    log: (line) => verbose && console.log(`[servicebus] ${line}`),
  });
  console.log(`Development Service Bus broker on port ${broker.port}`);
  console.log(broker.connectionString);
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    console.log(`${signal}: stopping the broker`);
    broker.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        console.error(err);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
