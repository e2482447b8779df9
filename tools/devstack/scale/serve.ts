/**
 * `npm start -- --instances auto|N`: the app as several local instances on the one embedded
 * Azurite and broker, sized by the ScaleController (auto) or fixed at N. Instance i1 serves
 * HTTP on PORT and is never removed; the others come and go with the drain subscription.
 */
import { parseArgs } from 'node:util';

import type { AspireDashboard } from '../aspire-dashboard';
import type { Azurite } from '../azurite';
import type { Broker } from '../servicebus/broker';
import { stopOnSignal } from '../stop-on-signal';
import { runFleet, targetPerInstance } from './fleet';

export interface InstancesRequest {
  min: number;
  max: number;
}

/** Ceiling of `auto`: each local instance is a Node process on the same few cores. */
const AUTO_MAX = 8;

/** `--instances auto` or `--instances N` (1–32) from the command line; undefined without the flag. */
export function instancesOption(argv: readonly string[]): InstancesRequest | undefined {
  // Not strict: npm start's other flags (--secondary) are read by the part they start.
  const { instances: raw } = parseArgs({
    args: [...argv],
    options: { instances: { type: 'string' } },
    strict: false,
    allowPositionals: true,
  }).values;
  if (raw === undefined) return undefined;
  if (raw === 'auto') return { min: 1, max: AUTO_MAX };
  // A bare `--instances` parses as `true` when not strict: no value given.
  const text = typeof raw === 'string' ? raw : '';
  const n = text === '' ? NaN : Number(text);
  if (!Number.isInteger(n) || n < 1 || n > 32)
    throw new Error(`--instances must be "auto" or a whole number from 1 to 32, got "${text}"`);
  return { min: n, max: n };
}

export async function serveFleet(
  request: InstancesRequest,
  parts: {
    broker: Broker | undefined;
    azurite: Pick<Azurite, 'stop'> | undefined;
    /** `--traces`: the dashboard every instance sends to, stopped last. */
    traces: Pick<AspireDashboard, 'stop' | 'url' | 'loginUrl'> | undefined;
    port: number;
  },
): Promise<void> {
  const { broker, azurite } = parts;
  if (!broker)
    throw new Error(
      '--instances needs the embedded development broker (leave ServiceBusConnection unset): the simulated scale controller reads its subscription counts',
    );
  const env = {
    StorageConnection: process.env.StorageConnection ?? '',
    ServiceBusConnection: process.env.ServiceBusConnection ?? '',
  };
  const rule = {
    targetPerInstance: targetPerInstance(),
    maxStep: 4,
    minInstances: request.min,
    maxInstances: request.max,
    coolDownMs: 30_000,
  };
  const fleet = runFleet({
    broker,
    env,
    firstPort: parts.port,
    rule,
    echo: (l) => console.log(l),
    log: (l) => console.log(l),
  });
  for (let i = 0; i < 1200 && !fleet.entryUrl; i++) await new Promise((r) => setTimeout(r, 100));
  console.log(
    [
      '',
      `pushdrain is running as ${request.min === request.max ? `${request.min} instance(s)` : `${request.min}–${request.max} instances (scale controller: ceil(active ÷ ${rule.targetPerInstance}), +≤4 per decision, idle ones stopped after 30 s)`}`,
      `  HTTP       ${fleet.entryUrl ?? '(instance i1 did not start)'}/api  (instance i1; GET /api/health on each instance shows its drains: each URL is printed as the instance starts)`,
      `  Storage    ${azurite ? 'embedded Azurite, data in .azurite/' : 'from StorageConnection'}`,
      '  ServiceBus embedded development broker',
      ...(parts.traces
        ? [`  Traces     Aspire dashboard ${parts.traces.url} (sign in: ${parts.traces.loginUrl})`]
        : []),
      'Press Ctrl-C to stop.',
      '',
    ].join('\n'),
  );
  stopOnSignal(
    (signal) => `\n${signal}: stopping the instances (drains hand their work back)…`,
    async () => {
      const shares = await fleet.stop();
      for (const s of shares)
        console.log(
          `  ${s.name}: ${s.activity ? `${s.activity.processed.map} map and ${s.activity.processed.reduce} reduce messages` : 'no report'}`,
        );
      await broker.stop();
      await azurite?.stop();
      await parts.traces?.stop();
    },
  );
}
