/** Builds an InvocationContext like the worker's, with logs prefixed by the function name. */
import { randomUUID } from 'node:crypto';

import { InvocationContext } from '@azure/functions';

export type HostLog = (level: string, functionName: string, message: string) => void;

export const consoleHostLog: HostLog = (level, fn, message) => {
  const line = `[${new Date().toISOString()}] ${fn}: ${message}`;
  if (level === 'error') console.error(line);
  else if (level === 'warning') console.warn(line);
  else console.log(line);
};

export function invocationContext(
  functionName: string,
  log: HostLog,
  triggerMetadata: Record<string, unknown> = {},
): InvocationContext {
  return new InvocationContext({
    invocationId: randomUUID(),
    functionName,
    triggerMetadata,
    logHandler: (level, ...args) =>
      log(level, functionName, args.map((a) => (typeof a === 'string' ? a : String(a))).join(' ')),
  });
}

/** `%NAME%` binding expressions resolve from app settings, as the host does; unset is an error. */
export function resolveSetting(value: string, env: Readonly<Record<string, string | undefined>>, what: string): string {
  return value.replace(/%([^%]+)%/g, (_, name: string) => {
    const v = env[name];
    if (v === undefined || v === '') throw new Error(`${what} refers to app setting ${name}, which is not set`);
    return v;
  });
}
