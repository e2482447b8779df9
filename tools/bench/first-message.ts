/**
 * Start to first message: how long a fresh process takes from its start to the first message
 * handled, for pushdrain's Functions entry files and a bare `@azure/functions` app
 * (first-message/bare-app.ts), on the same local host pieces. Each run is a fresh Node process
 * (first-message/probe.ts) started with a WorkDetected already waiting on the `drain`
 * subscription, as a cold instance is started for one; the apps alternate, and the medians of
 * the runs are printed with their breakdown (module load, settings, clients, first link,
 * handler). Embedded Azurite and the development broker on 127.0.0.1; times are reported, never
 * asserted.
 *
 * usage: node dist/tools/bench/first-message.js [--runs <n>] [--compare <dir>] [--out <file.json>]
 *   --compare  also another build of pushdrain (its compiled functions/ folder, inside this
 *              checkout so that it finds node_modules), run in turn with the others
 */
import { execFile } from 'node:child_process';
import { readdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

import { ServiceBusClient } from '@azure/service-bus';

import { workDetectedOutgoing } from '../../shared/bus/work-detected';
import { loadSettings } from '../../shared/config/settings';
import { entityNames, TOPIC } from '../../shared/names';
import { type Azurite, startAzurite } from '../devstack/azurite';
import { provisionStorage } from '../devstack/provision-storage';
import { type Broker, startBroker } from '../devstack/servicebus/broker';
import type { ProbeTimes } from './first-message/probe';
import { median } from './stats';

const PHASES = [
  'node',
  'modules',
  'settings',
  'clients',
  'link',
  'handler',
  'total',
  'modulesCpu',
  'totalCpu',
] as const;

function probe(args: string[], env: NodeJS.ProcessEnv): Promise<ProbeTimes> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [join(__dirname, 'first-message', 'probe.js'), ...args],
      { env, timeout: 90_000 },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`probe failed: ${err.message}\n${stderr}`));
        else resolve(JSON.parse(stdout.trim().split('\n').pop() ?? '') as ProbeTimes);
      },
    );
  });
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { runs: { type: 'string', default: '7' }, compare: { type: 'string' }, out: { type: 'string' } },
  });
  const runs = Number(values.runs);
  const pushdrain = (functionsDir: string): string[] => [
    '--settings',
    join(functionsDir, '..', 'shared', 'config', 'settings.js'),
    ...readdirSync(functionsDir)
      .filter((f) => f.endsWith('.js'))
      .sort()
      .map((f) => join(functionsDir, f)),
  ];
  const apps: Record<string, string[]> = {
    pushdrain: pushdrain(join(__dirname, '..', '..', 'functions')),
    ...(values.compare ? { 'pushdrain (compare)': pushdrain(resolve(values.compare)) } : {}),
    bare: [join(__dirname, 'first-message', 'bare-app.js')],
  };
  let azurite: Azurite | undefined;
  let broker: Broker | undefined;
  let client: ServiceBusClient | undefined;
  try {
    azurite = await startAzurite();
    broker = await startBroker({ notice: () => undefined });
    const env: NodeJS.ProcessEnv = {
      StorageConnection: azurite.connectionString,
      ServiceBusConnection: broker.connectionString,
      PUSHDRAIN_NAME_PREFIX: 'fm-',
      FUNCTIONS_WORKER_RUNTIME: 'node',
    };
    const settings = loadSettings(env);
    await provisionStorage(settings);
    client = new ServiceBusClient(broker.connectionString);
    const sender = client.createSender(TOPIC);
    // An input queue with nothing on it: pushdrain's handler looks once and is done.
    const queueName = entityNames(settings.namePrefix, settings.tuning.partitions).inputQueue(0);
    const event = workDetectedOutgoing({
      storageAccount: 'devstoreaccount1',
      queueName,
      payloadSize: 0,
      role: 'input',
    });
    const times: Record<string, ProbeTimes[]> = Object.fromEntries(Object.keys(apps).map((name) => [name, []]));
    for (let i = 0; i < runs; i++) {
      for (const [name, args] of Object.entries(apps)) {
        await sender.sendMessages(event);
        times[name]!.push(await probe(args, env));
      }
    }
    const result = Object.fromEntries(
      Object.entries(times).map(([name, list]) => [
        name,
        Object.fromEntries(PHASES.map((p) => [p, Math.round(median(list.map((t) => t[p])))])),
      ]),
    );
    console.log(`start to first message, medians of ${runs} fresh processes each (ms since process start)`);
    console.log(`| app | ${PHASES.join(' | ')} |`);
    console.log(`|---|${PHASES.map(() => '---:').join('|')}|`);
    for (const [name, r] of Object.entries(result)) console.log(`| ${name} | ${PHASES.map((p) => r[p]).join(' | ')} |`);
    if (values.out) writeFileSync(values.out, `${JSON.stringify({ runs, medians: result, times }, null, 2)}\n`);
  } finally {
    await client?.close();
    await broker?.stop();
    await azurite?.stop();
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
