/**
 * Runs the app's own function definitions on this machine: HTTP triggers on node:http,
 * timer triggers on their NCRONTAB schedules, Service Bus triggers through the SDK.
 * Everything is read from the captured registrations; nothing here repeats a route,
 * schedule or entity name.
 */
import type { PushdrainApp } from '../../../shared/app';
import { serviceBusOptions } from './host-json';
import { type HttpHost, startHttpHost } from './http-server';
import { consoleHostLog, type HostLog } from './invocation';
import { findRepoRoot, loadApp, type Registry } from './registry';
import { buildRoutes, type RouteEntry, routePrefix } from './routes';
import { type ServiceBusHost, startServiceBusTriggers } from './service-bus-triggers';
import { startTimers, type TimerHost } from './timers';

export interface LocalHostOptions {
  root?: string;
  /** HTTP port; 0 picks a free one. @defaultValue 7071 */
  port?: number;
  log?: HostLog;
}

export interface LocalHost {
  readonly registry: Registry;
  readonly routes: RouteEntry[];
  readonly http: HttpHost;
  readonly timers: TimerHost;
  readonly serviceBus: ServiceBusHost;
  /** Recovery of what a stopped process left open, with what was queued; see PushdrainApp.recover. */
  recover(options: Parameters<PushdrainApp['recover']>[0]): ReturnType<PushdrainApp['recover']>;
  /** A part npm start runs for the app is down (true) or back (false): health is red meanwhile. */
  partDown(part: string, down: boolean): void;
  /** Graceful: stop taking requests and events, let drains hand their work back, close. */
  stop(): Promise<void>;
}

interface PushdrainAppModule {
  pushdrainApp(): PushdrainApp;
}

/** The app the entry files built (loaded by loadApp already; required lazily so the stand-in core was in place first). */
function pushdrainApp(): PushdrainApp {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require('../../../functions/pushdrain-app') as PushdrainAppModule).pushdrainApp();
}

/** Reads app settings from process.env, as the worker does. Call once per process. */
export async function startLocalHost(options: LocalHostOptions = {}): Promise<LocalHost> {
  const root = options.root ?? findRepoRoot();
  const log = options.log ?? consoleHostLog;
  const env = process.env;
  // A function the Functions host would refuse stops the start here, with the host's message.
  const registry = loadApp(root, { settings: env });
  // appStart hooks validate settings: a bad one fails here, naming the setting.
  for (const hook of registry.hooks.appStart ?? []) await hook({ hookData: {}, appHookData: {} });
  const routes = buildRoutes(registry, routePrefix(root));
  const serviceBus = startServiceBusTriggers(registry.functions, env, serviceBusOptions(root), log);
  const timers = startTimers(registry.functions, env, log);
  const http = await startHttpHost(routes, options.port ?? 7071, log);
  let stopping: Promise<void> | undefined;
  return {
    registry,
    routes,
    http,
    timers,
    serviceBus,
    recover: (options) => pushdrainApp().recover(options),
    partDown: (part, down) => pushdrainApp().partDown(part, down),
    stop: () =>
      (stopping ??= (async () => {
        const app = pushdrainApp();
        app.beginShutdown();
        await Promise.all([http.close(), serviceBus.close(), timers.close()]);
        for (const hook of registry.hooks.appTerminate ?? []) await hook({ hookData: {}, appHookData: {} });
        await app.close();
      })()),
  };
}
