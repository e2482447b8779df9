/**
 * Captures the function registrations the Azure Functions host would receive. A stand-in
 * `@azure/functions-core` is installed before the app's modules load; `@azure/functions`
 * then calls its registerFunction/registerHook exactly as it calls the real worker's.
 * This is the single source of truth for triggers: the local host serves what is captured
 * here, and the deploy-readiness test checks the same capture against infra/.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import Module from 'node:module';
import { dirname, join } from 'node:path';

import { assertHostAccepts } from './host-rules';

export interface Binding {
  type: string;
  direction: 'in' | 'out';
  name: string;
  [key: string]: unknown;
}

export interface Registration {
  name: string;
  bindings: Record<string, Binding>;
  /** The handler as @azure/functions registered it: (triggerInput, context) => result. */
  handler: (...args: unknown[]) => unknown;
}

export interface Registry {
  functions: Registration[];
  hooks: Record<string, ((context: unknown) => unknown)[]>;
}

const CORE = '@azure/functions-core';
const STAND_IN_ID = '<pushdrain-functions-core-stand-in>';

type ResolveFilename = (request: string, ...rest: unknown[]) => string;

/** Installs the stand-in; must run before the first `app.*` call in this process. */
export function installCoreStandIn(): Registry {
  const registry: Registry = { functions: [], hooks: {} };
  const standIn = {
    setProgrammingModel: (): void => {},
    getProgrammingModel: (): unknown => undefined,
    registerFunction: (
      metadata: { name: string; bindings: Record<string, Binding> },
      handler: Registration['handler'],
    ) => {
      const bindings = Object.fromEntries(Object.entries(metadata.bindings).map(([name, b]) => [name, { ...b, name }]));
      registry.functions.push({ name: metadata.name, bindings, handler });
      return { dispose: () => {} };
    },
    registerHook: (hookName: string, callback: (context: unknown) => unknown) => {
      (registry.hooks[hookName] ??= []).push(callback);
      return { dispose: () => {} };
    },
    log: (level: string, _category: string, message: string): void => {
      if (level === 'error' || level === 'warning') console.warn(message);
    },
  };
  const mod = new Module(STAND_IN_ID);
  mod.exports = standIn;
  mod.loaded = true;
  require.cache[STAND_IN_ID] = mod;
  const m = Module as unknown as { _resolveFilename: ResolveFilename };
  const original = m._resolveFilename;
  m._resolveFilename = function (request: string, ...rest: unknown[]): string {
    return request === CORE ? STAND_IN_ID : original.call(this, request, ...rest);
  };
  return registry;
}

export function findRepoRoot(from: string = __dirname): string {
  let dir = from;
  while (!existsSync(join(dir, 'package.json')) || !existsSync(join(dir, 'host.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error(`no package.json with host.json above ${from}`);
    dir = up;
  }
  return dir;
}

/** The app's entry files from package.json `main` (a `dir/*.js` glob, as the Functions host reads it). */
function entryFiles(root: string): string[] {
  const main = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { main?: string }).main;
  if (!main) throw new Error('package.json has no "main"');
  const m = /^(.*)\/\*\.js$/.exec(main);
  if (!m?.[1]) return [join(root, main)];
  const dir = join(root, m[1]);
  if (!existsSync(dir)) throw new Error(`${m[1]} does not exist: run "npm run build" first`);
  return readdirSync(dir)
    .filter((f) => f.endsWith('.js'))
    .sort()
    .map((f) => join(dir, f));
}

export interface LoadAppOptions {
  /** App settings for `%NAME%` binding expressions; without them those are not checked. */
  settings?: Readonly<Record<string, string | undefined>>;
}

/**
 * Installs the stand-in and loads the app: what the Functions host would see. Throws
 * FunctionsRefused when the host would refuse a function (host-rules.ts), as Azure would at indexing.
 */
export function loadApp(root: string = findRepoRoot(), options: LoadAppOptions = {}): Registry {
  const registry = installCoreStandIn();
  // The host loads the entry files by path at run time, exactly as the Functions worker does.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  for (const file of entryFiles(root)) require(file);
  assertHostAccepts(registry.functions, options.settings);
  return registry;
}

/** The trigger binding of a registration. */
export function triggerOf(r: Registration): Binding {
  const t = Object.values(r.bindings).find((b) => b.direction === 'in' && b.type.endsWith('Trigger'));
  if (!t) throw new Error(`function ${r.name} has no trigger binding`);
  return t;
}

/** A string-valued binding property (route, schedule, connection, topic…), if present. */
export function stringProp(binding: Binding, key: string): string | undefined {
  const v = binding[key];
  return typeof v === 'string' ? v : undefined;
}
