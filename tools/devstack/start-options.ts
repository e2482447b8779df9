/**
 * `npm start`'s command line, checked before anything starts: a mistyped flag would otherwise be
 * ignored and the stack started without what was asked. The parts read their own flags
 * (instancesOption, secondaryAsked, the issuer's --auth); this only refuses what none of them reads.
 */
import { parseArgs } from 'node:util';

export const START_USAGE = `Usage: npm start [-- <options>]

Options:
  --instances <n|auto>     run the app as n local instances (1-32), or scale them by the queue depth
  --secondary              start the secondary development broker (backlog queues)
  --auth <keys|entra|both> how callers authenticate; entra and both start the local token issuer
  --traces                 start the Aspire dashboard (needs dotnet) and send the app's traces to it
  -h, --help               print this and exit`;

export interface StartOptions {
  readonly help: boolean;
  readonly traces: boolean;
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
    return { help: values.help === true, traces: values.traces === true };
  } catch (e) {
    throw new StartUsageError((e as Error).message);
  }
}
