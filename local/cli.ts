/**
 * Operator commands against the environment the settings point at (embedded or Azure):
 *   npm run redrive -- [--queue work-0] [--batch <batchId>] [--max 1000]
 * Reads the same settings as the app (StorageConnection, ServiceBusConnection, PUSHDRAIN_*).
 */
import { parseArgs as parseNodeArgs } from 'node:util';

import { loadSettings } from '../shared/config/settings';
import { createApp } from '../shared/create-app';
import { ensureError } from '../shared/errors';
import type { RedriveRequest } from '../shared/poison/redrive';

const USAGE = 'usage: cli redrive [--queue <queue>] [--batch <batchId>] [--max <n>]';

export function parseArgs(argv: readonly string[]): { command: 'redrive'; request: RedriveRequest } {
  let parsed;
  try {
    parsed = parseNodeArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: { queue: { type: 'string' }, batch: { type: 'string' }, max: { type: 'string' } },
    });
  } catch (e) {
    throw new Error(`${ensureError(e).message}\n${USAGE}`);
  }
  const [command, ...extra] = parsed.positionals;
  if (command !== 'redrive' || extra.length > 0) throw new Error(USAGE);
  const { queue, batch, max } = parsed.values;
  if (max !== undefined && !/^\d+$/.test(max)) throw new Error(`--max must be a whole number\n${USAGE}`);
  return { command, request: { ...(queue !== undefined ? { queue } : {}), ...(batch !== undefined ? { batchId: batch } : {}), ...(max !== undefined ? { max: Number(max) } : {}) } };
}

async function main(): Promise<void> {
  const { request } = parseArgs(process.argv.slice(2));
  const app = createApp(loadSettings(process.env));
  try {
    const result = await app.redrive(request);
    console.log(JSON.stringify(result, null, 2));
  } finally {
    await app.close();
  }
}

if (require.main === module) {
  main().catch((e: unknown) => {
    console.error(ensureError(e).message);
    process.exit(1);
  });
}
