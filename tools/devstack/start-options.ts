/**
 * `npm start`'s command line, checked before anything starts: a mistyped flag would otherwise be
 * ignored and the stack started without what was asked. `--instances` and `--secondary` are read
 * by the parts they start (instancesOption, secondaryAsked); `--auth` and `--traces` from here.
 */
import { parseArgs } from 'node:util';

export const START_USAGE = `Usage: npm start [-- <options>]

Options:
  --instances <n|auto>     run the app as n local instances (1-32), or scale them by the queue depth
  --secondary              start the secondary development broker (backlog queues)
  --auth <keys|entra|both> how callers authenticate; entra and both start the local token issuer
  --traces                 start the Aspire dashboard (needs dotnet) and send the app's traces to it
  -h, --help               print this and exit`;

export type AuthFlag = 'keys' | 'entra' | 'both';

export interface StartOptions {
  readonly help: boolean;
  readonly traces: boolean;
  /** `--auth`, when given. */
  readonly auth?: AuthFlag;
}

/** Thrown for a command line `npm start` does not take; start.ts prints it with the usage and exits 2. */
export class StartUsageError extends Error {}

export function startOptions(argv: readonly string[]): StartOptions {
  try {
    const { values } = parseArgs({
      args: [...argv],
      options: {
        instances: { type: 'string' },
        secondary: { type: 'boolean' },
        auth: { type: 'string' },
        traces: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    });
    const { auth } = values;
    if (auth !== undefined && auth !== 'keys' && auth !== 'entra' && auth !== 'both')
      throw new StartUsageError(`--auth takes keys, entra or both, got "${auth}"`);
    return { help: values.help === true, traces: values.traces === true, ...(auth ? { auth } : {}) };
  } catch (e) {
    if (e instanceof StartUsageError) throw e;
    throw new StartUsageError((e as Error).message);
  }
}
