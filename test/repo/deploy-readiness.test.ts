/**
 * Deploy readiness, offline: the function registrations the Functions host would receive (captured
 * in a child process by tools/devstack/host/print-registrations), held against the contract, against infra/
 * and against the route table the local host serves. What the app reads is derived from the code:
 * the bindings themselves, and the settings loadSettings looks up (the lint rule keeps every
 * process.env read in shared/config).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';

import { loadSettings, SECONDARY_CONNECTION, type Settings, TUNING_SPECS } from '../../shared/config/settings';
import { DEFAULT_TAX_RATES } from '../../shared/config/tax-rates';
import { backlogQueues, CONTAINERS, entityNames, SUBSCRIPTIONS } from '../../shared/names';
import { HTTP_CONTRACT, QUEUE_CONTRACT, TIMER_CONTRACT, TOPIC_CONTRACT } from '../support/contract';
import {
  appSettingsOf,
  type DeployedSetting,
  deployedSettings,
  isDeployTime,
  leafName,
  onlyOf,
  resourcesOf,
} from '../support/infra-snapshot';
import { readRepoFile, repoRoot } from '../support/repo';

/** The Functions host's own storage connection (timer leases, keys); always needed. */
const HOST_STORAGE = 'AzureWebJobsStorage';
/** Connections that switch a feature on: set only with their infra/ flag, the app works without them. */
const OPTIONAL_CONNECTIONS = new Map([[SECONDARY_CONNECTION, 'enableSecondaryNamespace']]);
/** Settings only some deployments need, with the variant that sets them: a secret exists only where it is used. */
const CONDITIONAL_SETTINGS = new Map([
  ['PUSHDRAIN_WEBHOOK_SECRET', 'webhooks'],
  ['PUSHDRAIN_CALLBACK_SIGNING_KEY', 'webhooks'],
]);

// ---------------------------------------------------------------------------------------------
// What the Functions host would receive
// ---------------------------------------------------------------------------------------------

interface Binding {
  type: string;
  direction: string;
  name: string;
  [key: string]: unknown;
}
interface Captured {
  functions: { name: string; trigger: Binding; bindings: Binding[] }[];
  hooks: string[];
  routes: { functionName: string; template: string; methods: string[]; authLevel: string }[];
}

const root = repoRoot();
const memo = new Map<string, Captured>();

/**
 * Registrations and routes from a child process: the stand-in core must load before @azure/functions.
 * `env` adds app settings (registration reads some at module load: the syphon's backlog queues).
 */
function captured(env: Record<string, string> = {}): Captured {
  const key = JSON.stringify(env);
  const known = memo.get(key);
  if (known) return known;
  const script = join(root, 'dist/tools/devstack/host/print-registrations.js');
  const run = spawnSync(process.execPath, [script], {
    cwd: root,
    encoding: 'utf8',
    timeout: 30_000,
    env: { ...process.env, ...env },
  });
  assert.equal(
    run.status,
    0,
    `${relative(root, script)} failed (run the build first):\n${run.stderr}${run.error?.message ?? ''}`,
  );
  const got = JSON.parse(run.stdout) as Captured;
  memo.set(key, got);
  return got;
}

function registration(name: string): Captured['functions'][number] {
  const found = captured().functions.find((f) => f.name === name);
  return (
    found ??
    assert.fail(
      `no function ${name} is registered (registered: ${captured()
        .functions.map((f) => f.name)
        .join(', ')})`,
    )
  );
}

/** Every `%NAME%` app-setting expression in a binding, with the field it is in. */
function settingExpressions(b: Binding): { field: string; setting: string }[] {
  const found: { field: string; setting: string }[] = [];
  const walk = (value: unknown, field: string): void => {
    if (typeof value === 'string') for (const m of value.matchAll(/%([^%]+)%/g)) found.push({ field, setting: m[1]! });
    else if (value && typeof value === 'object')
      for (const [k, v] of Object.entries(value)) walk(v, field ? `${field}.${k}` : k);
  };
  walk(b, '');
  return found;
}

// ---------------------------------------------------------------------------------------------
// What infra/ deploys
// ---------------------------------------------------------------------------------------------

const ENTITIES = 'infra/servicebus-entities.json';
// What Azure would receive (the snapshots of infra/): the default deployment's settings, and those
// only a variant's flag adds (conditional).
const deployed = deployedSettings();
const setting = (key: string): DeployedSetting | undefined => deployed.find((s) => s.key === key);
const where = (s: DeployedSetting): string => `${s.key} (${s.variant} snapshot)`;

/** A setting's value as the app would see it, where the snapshot could evaluate it. */
const evaluate = (s: DeployedSetting): string | undefined => (isDeployTime(s.value) ? undefined : s.value);

/** Stand-ins for values that only exist once deployed (module outputs), by setting suffix. */
const DEPLOY_TIME: Record<string, string> = {
  accountName: 'stdeploycheck',
  blobServiceUri: 'https://stdeploycheck.blob.core.windows.net/',
  queueServiceUri: 'https://stdeploycheck.queue.core.windows.net/',
  fullyQualifiedNamespace: 'sb-deploycheck.servicebus.windows.net',
  clientId: '00000000-0000-0000-0000-000000000000',
};

/** The scaling agent's own identity, and the cloud's login endpoint, known once deployed. */
const DEPLOY_TIME_SETTINGS: Record<string, string> = {
  PUSHDRAIN_SCALE_CLIENT_ID: '00000000-0000-0000-0000-000000000000',
  PUSHDRAIN_AUTH_ISSUER: 'https://login.microsoftonline.com/00000000-0000-0000-0000-00000000aaaa/v2.0',
  PUSHDRAIN_AUTH_JWKS_URL: 'https://login.microsoftonline.com/00000000-0000-0000-0000-00000000aaaa/discovery/v2.0/keys',
};

/** The environment the app starts with on every deployment (conditional settings left out). */
function deployedEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const s of deployed.filter((x) => !x.conditional)) {
    const value = evaluate(s) ?? DEPLOY_TIME[s.key.split('__')[1] ?? ''] ?? DEPLOY_TIME_SETTINGS[s.key];
    if (value !== undefined) env[s.key] = value;
  }
  return env;
}

// ---------------------------------------------------------------------------------------------
// What the app reads: the lint rule keeps process.env inside shared/config, so what loadSettings
// looks up when it starts on the deployed environment is every setting the app reads.
// ---------------------------------------------------------------------------------------------

function recordReads(env: Record<string, string>): string[] {
  const read = new Set<string>();
  try {
    loadSettings(
      new Proxy(env, { get: (target, key) => (typeof key === 'string' && read.add(key), target[key as string]) }),
    );
  } catch {
    // 'the app accepts the deployed settings at start-up' below reports why.
  }
  return [...read];
}

const reads = recordReads(deployedEnv());
/** Names read with a `__suffix` are connections; the bare name of one holds a connection string (a key). */
const connectionNames = new Set(reads.filter((k) => k.includes('__')).map((k) => k.split('__')[0]!));
const suffixesRead = (name: string): string[] =>
  reads.filter((k) => k.startsWith(`${name}__`)).map((k) => k.slice(name.length));
/** Settings the Functions platform itself reads (NPM_CONFIG_*: npm, in the remote build); the app never does. */
const PLATFORM = /^(APPLICATIONINSIGHTS_|FUNCTIONS_|WEBSITE_|NPM_CONFIG_)/;

/** Identity-based settings of a connection, per service (Azure Functions identity-based connections). */
const IDENTITY_FORMS: Record<'serviceBus' | 'storage', string[][]> = {
  serviceBus: [['__fullyQualifiedNamespace']],
  storage: [['__accountName'], ['__blobServiceUri', '__queueServiceUri']],
};
const BINDING_SERVICE: Record<string, keyof typeof IDENTITY_FORMS> = {
  serviceBusTrigger: 'serviceBus',
  serviceBus: 'serviceBus',
  blobTrigger: 'storage',
  blob: 'storage',
  queueTrigger: 'storage',
  queue: 'storage',
};

/** Which service a connection the code reads is for, from the suffixes it reads. */
function serviceOfReads(name: string): keyof typeof IDENTITY_FORMS | undefined {
  const suffixes = new Set(suffixesRead(name));
  const kinds = (Object.keys(IDENTITY_FORMS) as (keyof typeof IDENTITY_FORMS)[]).filter((k) =>
    IDENTITY_FORMS[k].flat().some((s) => suffixes.has(s)),
  );
  return kinds.length === 1 ? kinds[0] : undefined;
}

/** Every plain (non-connection) setting the app reads, with where it is read. */
function settingsRead(): Map<string, string> {
  const read = new Map<string, string>();
  for (const k of reads) if (!k.includes('__') && !connectionNames.has(k)) read.set(k, 'loadSettings');
  for (const f of captured().functions)
    for (const b of f.bindings)
      for (const e of settingExpressions(b)) read.set(e.setting, `binding ${f.name}.${e.field}`);
  return read;
}

// ---------------------------------------------------------------------------------------------
// The checks
// ---------------------------------------------------------------------------------------------

void describe('deploy readiness: the registrations the Functions host receives', () => {
  void it('every function name is registered once', () => {
    const names = captured().functions.map((f) => f.name);
    assert.deepEqual(
      names.filter((n, i) => names.indexOf(n) !== i),
      [],
      'duplicate function names',
    );
    assert.ok(names.length > 0, 'no function was registered: is package.json main pointing at the build?');
  });

  for (const c of HTTP_CONTRACT) {
    void it(`${c.name}: httpTrigger ${c.methods.join(',')} ${c.route}, authLevel ${c.authLevel}`, () => {
      const t = registration(c.name).trigger;
      assert.equal(t.type, 'httpTrigger', `${c.name} trigger type`);
      assert.equal(t.route, c.route, `${c.name} route`);
      assert.deepEqual(
        (t.methods as string[] | undefined)?.map((m) => m.toUpperCase()),
        c.methods,
        `${c.name} methods`,
      );
      assert.equal(t.authLevel, c.authLevel, `${c.name} authLevel`);
    });
  }

  for (const c of TIMER_CONTRACT) {
    void it(`${c.name}: timerTrigger on ${c.schedule}`, () => {
      const t = registration(c.name).trigger;
      assert.equal(t.type, 'timerTrigger', `${c.name} trigger type`);
      assert.equal(t.schedule, c.schedule, `${c.name} schedule`);
    });
  }

  for (const c of TOPIC_CONTRACT) {
    void it(`${c.name}: serviceBusTrigger on ${c.topic}/${c.subscription} through ${c.connection}`, () => {
      const t = registration(c.name).trigger;
      assert.equal(t.type, 'serviceBusTrigger', `${c.name} trigger type`);
      assert.equal(t.topicName, c.topic, `${c.name} topic`);
      assert.equal(
        t.subscriptionName,
        c.subscription,
        `${c.name} subscribes to ${String(t.subscriptionName)}, the contract says ${c.subscription}`,
      );
      assert.equal(t.connection, c.connection, `${c.name} connection`);
    });
  }

  for (const c of QUEUE_CONTRACT) {
    void it(`${c.name}: serviceBusTrigger on queue ${c.queue} through ${c.connection}`, () => {
      const t = registration(c.name).trigger;
      assert.equal(t.type, 'serviceBusTrigger', `${c.name} trigger type`);
      assert.equal(t.queueName, c.queue, `${c.name} queue`);
      assert.equal(t.connection, c.connection, `${c.name} connection`);
    });
  }

  void it('every function registered is in the contract (a new function must be added here and to infra)', () => {
    const known = new Set(
      [...HTTP_CONTRACT, ...TIMER_CONTRACT, ...TOPIC_CONTRACT, ...QUEUE_CONTRACT].map((c) => c.name),
    );
    assert.deepEqual(
      captured()
        .functions.map((f) => f.name)
        .filter((n) => !known.has(n)),
      [],
    );
  });
});

void describe('deploy readiness: infra/ provides what the bindings use', () => {
  void it('each connection (every binding connection, StorageConnection, AzureWebJobsStorage) has identity-based settings on every deployment', () => {
    const needed = new Map<string, { service: keyof typeof IDENTITY_FORMS | undefined; why: string }>();
    for (const f of captured().functions) {
      for (const b of f.bindings.filter((x) => typeof x.connection === 'string')) {
        const service = BINDING_SERVICE[b.type];
        assert.ok(
          service,
          `${f.name}: ${b.type} binding with a connection; teach this test which identity settings it needs`,
        );
        needed.set(b.connection as string, { service, why: `binding ${f.name}.${b.type}` });
      }
    }
    for (const name of connectionNames)
      if (!needed.has(name)) needed.set(name, { service: serviceOfReads(name), why: 'read by the code' });
    needed.set(HOST_STORAGE, { service: 'storage', why: 'the Functions host' });
    for (const name of ['StorageConnection', 'ServiceBusConnection']) {
      assert.ok(
        connectionNames.has(name),
        `loadSettings should read ${name}__…; it reads connections ${[...connectionNames].join(', ')}`,
      );
    }

    const problems: string[] = [];
    for (const [name, { service, why }] of needed) {
      if (!service) {
        problems.push(`${name} (${why}): cannot tell which service it is for`);
        continue;
      }
      const set = new Map(
        deployed.filter((s) => s.key.startsWith(`${name}__`)).map((s) => [s.key.slice(name.length), s]),
      );
      const optional = OPTIONAL_CONNECTIONS.has(name);
      const complete = IDENTITY_FORMS[service].some((form) =>
        form.every((suffix) => set.has(suffix) && (optional || !set.get(suffix)!.conditional)),
      );
      if (!complete) {
        const forms = IDENTITY_FORMS[service].map((form) => form.map((s) => name + s).join(' + ')).join(' or ');
        problems.push(
          `${name} (${why}) needs ${forms} on the function app; infra/ sets ${[...set.keys()].map((s) => name + s).join(', ') || 'nothing'}`,
        );
      }
      const known = new Set([...IDENTITY_FORMS[service].flat(), '__credential', '__clientId', ...suffixesRead(name)]);
      for (const [suffix, s] of set)
        if (!known.has(suffix))
          problems.push(`${where(s)}: ${name}${suffix} is not a setting the ${service} connection understands`);
      // The app runs as a user-assigned identity only: managedidentity without a client id gets no token.
      const credential = set.get('__credential');
      if (credential && evaluate(credential) === 'managedidentity' && !set.has('__clientId')) {
        problems.push(`${where(credential)}: ${name}__credential is managedidentity but ${name}__clientId is not set`);
      }
    }
    assert.deepEqual(problems, []);
  });

  void it('the primary namespace provisions the topics and queues of infra/servicebus-entities.json', () => {
    const json = JSON.parse(readRepoFile(ENTITIES)) as { topics: { name: string }[]; queues: { name: string }[] };
    assert.deepEqual(
      resourcesOf('Microsoft.ServiceBus/namespaces/topics').map(leafName),
      json.topics.map((t) => t.name),
    );
    assert.deepEqual(
      resourcesOf('Microsoft.ServiceBus/namespaces/queues').map(leafName),
      json.queues.map((q) => q.name),
    );
  });

  void it('every topic and subscription a binding names is in infra/servicebus-entities.json, with the filter the architecture requires', () => {
    const json = JSON.parse(readRepoFile(ENTITIES)) as {
      topics: { name: string; subscriptions: { name: string; filter: Record<string, string> | null }[] }[];
    };
    const problems: string[] = [];
    let checked = 0;
    for (const f of captured().functions) {
      for (const b of f.bindings) {
        if (typeof b.topicName !== 'string') continue;
        checked++;
        const topic = json.topics.find((t) => t.name === b.topicName);
        if (!topic) {
          problems.push(
            `${f.name}: topic ${b.topicName} is not in ${ENTITIES} (it has ${json.topics.map((t) => t.name).join(', ')})`,
          );
          continue;
        }
        if (typeof b.subscriptionName !== 'string') continue; // an output binding sends to the topic itself
        const sub = topic.subscriptions.find((s) => s.name === b.subscriptionName);
        if (!sub) {
          const has = topic.subscriptions.map((s) => s.name).join(', ');
          problems.push(
            `${f.name}: subscription ${topic.name}/${b.subscriptionName} is not in ${ENTITIES} (it has ${has})`,
          );
          continue;
        }
        const role =
          TOPIC_CONTRACT.find((c) => c.name === f.name)?.role ??
          Object.values(SUBSCRIPTIONS).find((s) => s.name === sub.name)?.role;
        const expected = role === undefined ? null : { role };
        if (JSON.stringify(sub.filter) !== JSON.stringify(expected)) {
          problems.push(
            `${f.name}: subscription ${topic.name}/${sub.name} filter is ${JSON.stringify(sub.filter)}, should be ${JSON.stringify(expected)}`,
          );
        }
      }
    }
    assert.ok(checked > 0, 'no binding names a topic');
    assert.deepEqual(problems, []);
  });

  void it('every Service Bus queue a binding names is in infra/servicebus-entities.json', () => {
    const json = JSON.parse(readRepoFile(ENTITIES)) as { queues: { name: string }[] };
    const named = captured().functions.flatMap((f) =>
      f.bindings
        .filter((b) => typeof b.queueName === 'string' && b.type.startsWith('serviceBus'))
        .map((b) => ({ f: f.name, queue: b.queueName as string })),
    );
    assert.ok(named.length > 0, 'no binding names a Service Bus queue');
    assert.deepEqual(
      named
        .filter((n) => !json.queues.some((q) => q.name === n.queue))
        .map((n) => `${n.f}: queue ${n.queue} is not provisioned`),
      [],
    );
  });

  void it('every %SETTING% in a binding is set on every deployment, with a usable value', () => {
    const problems: string[] = [];
    let checked = 0;
    for (const f of captured().functions) {
      for (const b of f.bindings) {
        for (const { field, setting: name } of settingExpressions(b)) {
          checked++;
          const s = setting(name);
          if (!s) problems.push(`${f.name}.${field} uses %${name}%, which infra/ does not set on the function app`);
          else if (s.conditional)
            problems.push(`${f.name}.${field} uses %${name}%, which only the ${s.variant} variant sets`);
          else if (field === 'schedule') {
            const value = evaluate(s);
            if (value === undefined || value.trim().split(/\s+/).length !== 6) {
              problems.push(`${where(s)} = ${value ?? s.value}: a timer schedule needs six NCRONTAB fields`);
            }
          }
        }
      }
    }
    assert.ok(checked > 0, 'no binding uses a %SETTING% expression');
    assert.deepEqual(problems, []);
  });

  void it('every queue and container the deployed app uses is provisioned (names as shared/names.ts derives them)', () => {
    const settings = loadSettings(deployedEnv());
    const names = entityNames(settings.namePrefix, settings.tuning.partitions);
    const queues = new Set(resourcesOf('Microsoft.Storage/storageAccounts/queueServices/queues').map(leafName));
    assert.deepEqual(
      names.allQueues().filter((q) => !queues.has(q)),
      [],
      `queues the app uses (PUSHDRAIN_PARTITIONS ${settings.tuning.partitions}) that are not provisioned`,
    );
    const containers = new Set(resourcesOf('Microsoft.Storage/storageAccounts/blobServices/containers').map(leafName));
    assert.deepEqual(
      CONTAINERS.map((k) => names.container(k)).filter((c) => !containers.has(c)),
      [],
      'containers the app uses that are not provisioned',
    );
  });
});

void describe('deploy readiness: every app setting the code reads is set in infra/', () => {
  void it('loadSettings reads settings and identity-based connections (the recording works)', () => {
    assert.ok(
      settingsRead().has('PUSHDRAIN_PARTITIONS') && connectionNames.has('StorageConnection'),
      `recorded: ${reads.join(', ')}`,
    );
    for (const spec of TUNING_SPECS)
      assert.ok(reads.includes(spec.setting), `${spec.setting} is in TUNING_SPECS but loadSettings never reads it`);
  });

  void it('infra/ sets no app setting the app does not read (platform settings aside)', () => {
    const connections = new Set([
      ...connectionNames,
      HOST_STORAGE,
      ...captured().functions.flatMap((f) => f.bindings.map((b) => b.connection).filter((c) => typeof c === 'string')),
    ]);
    const read = settingsRead();
    const unread = deployed.filter(
      (s) => !read.has(s.key) && !connections.has(s.key.split('__')[0]!) && !PLATFORM.test(s.key),
    );
    assert.deepEqual(unread.map(where), []);
  });

  void it('each setting read (by loadSettings, or as %NAME% in a binding) is set on every deployment', () => {
    const problems: string[] = [];
    for (const [name, where] of settingsRead()) {
      if (PLATFORM.test(name)) continue; // set by the platform on every instance (WEBSITE_SITE_NAME), not by infra/
      const s = setting(name);
      if (!s) problems.push(`${name} (read at ${where}) is not set in infra/`);
      else if (s.conditional && CONDITIONAL_SETTINGS.get(name) !== s.variant)
        problems.push(`${name} (read at ${where}) is set only by the ${s.variant} variant`);
    }
    assert.deepEqual(problems, []);
  });

  void it('the app accepts the deployed settings at start-up: identity connections, the default tax table, no name prefix', () => {
    const env = deployedEnv();
    const opaque = [...settingsRead().keys()].filter(
      (name) => setting(name) && !(name in env) && !CONDITIONAL_SETTINGS.has(name),
    );
    assert.deepEqual(
      opaque,
      [],
      'settings whose deployed value is neither a literal nor a param default, so this check cannot see it',
    );
    let settings: Settings;
    try {
      settings = loadSettings(env);
    } catch (e) {
      assert.fail(`loadSettings rejects what infra/ deploys: ${(e as Error).message}`);
    }
    assert.equal(settings.storage.kind, 'identity', 'storage connection kind');
    assert.equal(
      settings.storage.setting,
      'StorageConnection',
      'the app should use StorageConnection, not fall back to AzureWebJobsStorage',
    );
    assert.equal(settings.serviceBus?.kind, 'identity', 'ServiceBusConnection kind');
    assert.deepEqual(
      settings.taxRates,
      { ...DEFAULT_TAX_RATES },
      'PUSHDRAIN_TAX_RATES default differs from DEFAULT_TAX_RATES',
    );
    assert.equal(settings.namePrefix, '', 'provisioned names carry no prefix');
    for (const spec of TUNING_SPECS)
      assert.equal(settings.tuning[spec.key], spec.def, `${spec.setting} as deployed by default`);
    assert.equal(settings.scale.mode, 'dry-run', 'the scaling agent only logs until it is switched on');
    assert.equal(settings.scale.plan, 'flex');
    const site = onlyOf('Microsoft.Web/sites');
    const [, subscriptionId, resourceGroup] =
      /^\/subscriptions\/([^/]+)\/resourceGroups\/([^/]+)\//.exec(site.id) ?? assert.fail(site.id);
    assert.deepEqual(settings.scale.site, { subscriptionId, resourceGroup, siteName: site.name });
    assert.deepEqual(settings.scale.identity, {
      credential: 'managedidentity',
      clientId: DEPLOY_TIME_SETTINGS.PUSHDRAIN_SCALE_CLIENT_ID,
    });
  });
});

void describe('deploy readiness: the local host serves what Azure would', () => {
  void it('the route table has each HTTP registration with its route (under the host.json prefix), methods and authLevel, and nothing else', () => {
    const host = JSON.parse(readRepoFile('host.json')) as { extensions?: { http?: { routePrefix?: string } } };
    const prefix = host.extensions?.http?.routePrefix ?? 'api'; // the Functions host's default
    const http = captured().functions.filter((f) => f.trigger.type === 'httpTrigger');
    assert.ok(http.length > 0, 'no HTTP function is registered');
    const expected = http.map((f) => {
      const t = f.trigger;
      assert.ok(Array.isArray(t.methods) && t.methods.length > 0, `${f.name} registers no methods`);
      assert.equal(typeof t.authLevel, 'string', `${f.name} registers no authLevel`);
      const route = typeof t.route === 'string' ? t.route : f.name;
      return {
        functionName: f.name,
        template: [prefix, route].filter((s) => s !== '').join('/'),
        methods: (t.methods as string[]).map((m) => m.toUpperCase()),
        authLevel: t.authLevel as string,
      };
    });
    // One line per route, so that a difference reads as the route that differs (+ served, - registered).
    const line = (r: Captured['routes'][number]): string =>
      `${r.functionName}: ${r.methods.join(',')} /${r.template} (authLevel ${r.authLevel})`;
    assert.deepEqual(captured().routes.map(line).sort(), expected.map(line).sort());
    const pairs = captured().routes.flatMap((r) => r.methods.map((m) => `${m} ${r.template.toLowerCase()}`));
    assert.deepEqual(
      pairs.filter((p, i) => pairs.indexOf(p) !== i),
      [],
      'two functions serve the same method and route',
    );
  });
});

void describe('deploy readiness: send availability (a secondary namespace)', () => {
  const count = 3;
  const withSecondary = {
    [`${SECONDARY_CONNECTION}__fullyQualifiedNamespace`]: 'sb2-deploycheck.servicebus.windows.net',
    PUSHDRAIN_BACKLOG_QUEUE_COUNT: String(count),
  };

  void it('without ServiceBusSecondaryConnection no syphon is registered; with it, one Service Bus trigger per backlog queue through that connection', () => {
    assert.deepEqual(
      captured()
        .functions.filter((f) => f.name.startsWith('syphon'))
        .map((f) => f.name),
      [],
    );
    const syphons = captured(withSecondary).functions.filter((f) => f.name.startsWith('syphon'));
    assert.deepEqual(
      syphons.map((f) => [f.name, f.trigger.type, f.trigger.queueName, f.trigger.connection]),
      backlogQueues(count).map((q) => [`syphon-${q}`, 'serviceBusTrigger', q, SECONDARY_CONNECTION]),
    );
    const others = captured(withSecondary)
      .functions.filter((f) => !f.name.startsWith('syphon'))
      .map((f) => f.name);
    assert.deepEqual(
      others,
      captured().functions.map((f) => f.name),
      'the secondary adds the syphon and changes nothing else',
    );
  });

  void it('infra/ provisions the queues the syphon binds: backlog-{i} for i < the PUSHDRAIN_BACKLOG_QUEUE_COUNT the app reads', () => {
    const n = Number(appSettingsOf('secondary').PUSHDRAIN_BACKLOG_QUEUE_COUNT);
    assert.ok(n > 0);
    const secondary =
      resourcesOf('Microsoft.ServiceBus/namespaces', 'secondary').find((ns) => ns.name.startsWith('sb2-')) ??
      assert.fail('no secondary namespace');
    const queues = resourcesOf('Microsoft.ServiceBus/namespaces/queues', 'secondary').filter((q) =>
      q.name.startsWith(`${secondary.name}/`),
    );
    assert.deepEqual(queues.map(leafName), backlogQueues(n));
  });

  void it('with the flag on, the app accepts the deployed secondary settings (identity-based, the managed identity)', () => {
    const secondary = deployed.filter((s) => s.key.startsWith(`${SECONDARY_CONNECTION}__`));
    assert.ok(secondary.length > 0 && secondary.every((s) => s.conditional), 'set only with enableSecondaryNamespace');
    const env: Record<string, string> = { ...deployedEnv() };
    for (const s of secondary) {
      const value = evaluate(s) ?? DEPLOY_TIME[s.key.split('__')[1] ?? ''];
      if (value !== undefined) env[s.key] = value;
    }
    const settings = loadSettings(env);
    assert.equal(settings.serviceBusSecondary?.kind, 'identity');
    assert.equal(
      settings.serviceBusSecondary?.kind === 'identity' ? settings.serviceBusSecondary.credential : undefined,
      'managedidentity',
    );
    assert.equal(loadSettings(deployedEnv()).serviceBusSecondary, undefined, 'off by default');
  });
});
