/**
 * Operator commands against the environment the settings point at (embedded or Azure):
 *   npm run redrive -- [--queue work-0] [--batch <batchId>] [--max 1000]
 * Reads the same settings as the app (StorageConnection, ServiceBusConnection, PUSHDRAIN_*).
 */
import { loadSettings } from '../shared/config/settings';
import { ensureError } from '../shared/errors';
import type { RedriveRequest } from '../shared/poison/redrive';
import { Runtime } from '../shared/runtime';

const USAGE = 'usage: cli redrive [--queue <queue>] [--batch <batchId>] [--max <n>]';

export function parseArgs(argv: readonly string[]): { command: 'redrive'; request: RedriveRequest } {
  const [command, ...rest] = argv;
  if (command !== 'redrive') throw new Error(USAGE);
  const request: RedriveRequest = {};
  for (let i = 0; i < rest.length; i += 2) {
    const flag = rest[i];
    const value = rest[i + 1];
    if (value === undefined) throw new Error(`${flag ?? ''} needs a value\n${USAGE}`);
    if (flag === '--queue') request.queue = value;
    else if (flag === '--batch') request.batchId = value;
    else if (flag === '--max' && /^\d+$/.test(value)) request.max = Number(value);
    else throw new Error(`unknown or malformed option ${flag ?? ''}\n${USAGE}`);
  }
  return { command, request };
}

async function main(): Promise<void> {
  const { request } = parseArgs(process.argv.slice(2));
  const rt = new Runtime(loadSettings(process.env));
  try {
    const result = await rt.redrive(request);
    console.log(JSON.stringify(result, null, 2));
  } finally {
    await rt.close();
  }
}

if (require.main === module) {
  main().catch((e: unknown) => {
    console.error(ensureError(e).message);
    process.exit(1);
  });
}
