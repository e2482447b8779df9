/**
 * One fresh process of the start-to-first-message bench (tools/bench/first-message.ts): loads
 * an app's entry files behind the local host's stand-in core, runs its appStart hooks, opens
 * the link of its trigger on the `drain` subscription, where a message already waits, and
 * prints one JSON line of times in ms since the process started (performance.now()).
 *
 * The order is the Functions worker's: the entry files load before the host's links exist, so
 * a module the app imports is the app's cost, even when the host's Service Bus trigger would
 * have loaded it anyway (in Azure the links are the .NET host's, which loads no Node module).
 *
 * usage: node probe.js [--settings <settings.js>] <entry.js>... (settings from the environment, as
 * the worker reads them; `--settings`: the app's settings module, timed on its own)
 */
import { join } from 'node:path';

import { installCoreStandIn, type Registration, stringProp, triggerOf } from '../../devstack/host/registry';

/** The times one process reports. */
export interface ProbeTimes {
  /** Node's own start, up to this file's first line. */
  node: number;
  /** The entry files and everything they import. */
  modules: number;
  /** PUSHDRAIN settings read and validated (pushdrain only; the hook does it again, from warm code). */
  settings: number;
  /** The appStart hooks: pushdrain's telemetry (off) and composition root (SDK clients, no I/O). */
  clients: number;
  /** From opening the trigger's link to the waiting message reaching the handler. */
  link: number;
  /** The handler's own work on that message. */
  handler: number;
  /** Process start to the first message handled (the handler returned). */
  total: number;
  /** CPU time (user + system) of the module load: on a shared machine, steadier than its wall time. */
  modulesCpu: number;
  /** CPU time of the process up to the first message handled. */
  totalCpu: number;
}

/** CPU time this process has used, in ms. */
function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

async function main(args: string[]): Promise<ProbeTimes> {
  const settingsModule = args[0] === '--settings' ? args[1] : undefined;
  const entries = settingsModule ? args.slice(2) : args;
  const node = performance.now();
  const cpuAtStart = cpuMs();
  const registry = installCoreStandIn();
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  for (const file of entries) require(file);
  const loaded = performance.now();
  const modulesCpu = cpuMs() - cpuAtStart;
  let settings = 0;
  if (settingsModule) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { loadSettings } = require(settingsModule) as { loadSettings: () => unknown };
    const s = performance.now();
    loadSettings();
    settings = performance.now() - s;
  }
  const hooksAt = performance.now();
  for (const hook of registry.hooks.appStart ?? []) await hook({ hookData: {}, appHookData: {} });
  const clientsDone = performance.now();
  const target = registry.functions.find((f: Registration) => {
    const t = triggerOf(f);
    return t.type === 'serviceBusTrigger' && stringProp(t, 'subscriptionName') === 'drain';
  });
  if (!target) throw new Error('no Service Bus trigger on the drain subscription');
  let entered = 0;
  let handled = 0;
  const done = new Promise<void>((resolve, reject) => {
    const inner = target.handler;
    target.handler = async (...args: Parameters<Registration['handler']>) => {
      entered ||= performance.now();
      try {
        return await inner(...args);
      } catch (e) {
        reject(e instanceof Error ? e : new Error(String(e)));
        throw e;
      } finally {
        handled ||= performance.now();
        resolve();
      }
    };
  });
  // The host's side, after the app's modules (see the header).
  const linkAt = performance.now();
  const { startServiceBusTriggers } = await import('../../devstack/host/service-bus-triggers.js');
  const { serviceBusOptions } = await import('../../devstack/host/host-json.js');
  const root = join(__dirname, '..', '..', '..', '..');
  const host = startServiceBusTriggers([target], process.env, serviceBusOptions(root), () => undefined);
  const timeout = setTimeout(() => {
    process.stderr.write('no message within 60 s\n');
    process.exit(2);
  }, 60_000);
  await done;
  const totalCpu = cpuMs();
  clearTimeout(timeout);
  await host.close(); // settles the message, so the next process finds only its own
  return {
    node,
    modules: loaded - node,
    settings,
    clients: clientsDone - hooksAt,
    link: entered - linkAt,
    handler: handled - entered,
    total: handled,
    modulesCpu,
    totalCpu,
  };
}

main(process.argv.slice(2)).then(
  (times) => {
    process.stdout.write(`${JSON.stringify(times)}\n`);
    process.exit(0);
  },
  (e: unknown) => {
    process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  },
);
