/**
 * Offline checks of infra/ (no Bicep compiler here; CI's bicep job compiles it for real).
 * They read the .bicep files as text and hold the infrastructure to what the app relies on:
 * names from shared/names.ts, settings from shared/config/settings.ts, identity-only connections,
 * least-privilege roles and secure defaults. Each check names the file and line it rejects.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';

import { SCALE_SPECS, TUNING_SPECS } from '../shared/config/settings';
import { backlogQueues, CONTAINERS, entityNames, SUBSCRIPTIONS, TOPIC } from '../shared/names';
import { backlogEntities } from '../tools/devstack/servicebus/secondary';
import {
  bicepFiles,
  type Block,
  decoratorNumber,
  entries,
  functionAppSettings,
  jsonContentLoads,
  lineOf,
  mask,
  moduleOutputRefs,
  modules,
  params,
  propertyAt,
  provisionedContainers,
  provisionedQueues,
  resolveFrom,
  type Resource,
  resources,
  unresolvedIdentifiers,
} from './support/bicep-text';
import { readRepoFile, repoRoot } from './support/repo';

const MAIN = 'infra/main.bicep';
const files = bicepFiles();
const source = new Map(files.map((f) => [f, readRepoFile(f)]));
const src = (f: string): string => source.get(f) ?? assert.fail(`${f} is missing`);

const allResources = files.flatMap((file) => resources(src(file)).map((r) => ({ file, ...r })));

function resourcesOfType(type: string): (Resource & { file: string })[] {
  return allResources.filter((r) => r.type === type && !r.existing);
}

function only(type: string): Resource & { file: string } {
  const found = resourcesOfType(type);
  assert.equal(found.length, 1, `expected exactly one ${type}, found ${found.length}`);
  return found[0]!;
}

function expectProperty(r: Resource & { file: string }, path: string[], expected: string): void {
  const actual = propertyAt(src(r.file), r.body, path);
  assert.equal(actual, expected, `${r.file}:${r.line} ${r.symbol}.${path.join('.')} should be ${expected}, is ${actual ?? 'absent'}`);
}

// The settings the function app is deployed with, followed from its appsettings resource.
const appSettings = new Map(functionAppSettings(src, files).map((s) => [s.key, s.value]));
const mainParams = new Map(params(src(MAIN)).map((p) => [p.name, p]));

void describe('infra: Bicep structure', () => {
  void it('every module path resolves to a Bicep file, and every module file is used', () => {
    const used = new Set<string>([MAIN]);
    for (const file of files) {
      for (const m of modules(src(file))) {
        assert.ok(!/^(br[:/]|ts:)/.test(m.path), `${file}:${m.line} registry module ${m.path}: keep modules local so they can be read offline`);
        const target = resolveFrom(file, m.path);
        assert.ok(existsSync(join(repoRoot(), target)), `${file}:${m.line} module ${m.symbol} points at missing ${target}`);
        used.add(target);
      }
    }
    assert.deepEqual(files.filter((f) => !used.has(f)), [], 'Bicep files no module references');
  });

  void it('module params: each one passed is declared in the module, each required one is passed', () => {
    for (const file of files) {
      for (const m of modules(src(file))) {
        const declared = params(src(resolveFrom(file, m.path)));
        const names = new Set(declared.map((p) => p.name));
        for (const key of m.paramKeys) assert.ok(names.has(key), `${file}:${m.line} passes ${key}, which ${m.path} does not declare`);
        for (const p of declared.filter((d) => !d.optional)) {
          assert.ok(m.paramKeys.includes(p.name), `${file}:${m.line} does not pass required param ${p.name} of ${m.path}`);
        }
      }
    }
  });

  void it('every identifier is declared in its file (params, vars, resources, modules, loop and lambda variables) or is a Bicep function', () => {
    const problems = files.flatMap((file) => unresolvedIdentifiers(src(file)).map((u) => `${file}:${u.line} unknown ${u.what} ${u.name}`));
    assert.deepEqual(problems, []);
  });

  void it('every module output used is declared by that module', () => {
    for (const file of files) {
      const bySymbol = new Map(modules(src(file)).map((m) => [m.symbol, resolveFrom(file, m.path)]));
      for (const ref of moduleOutputRefs(src(file))) {
        const target = bySymbol.get(ref.symbol);
        assert.ok(target, `${file}:${ref.line} ${ref.symbol}.outputs: ${ref.symbol} is not a module`);
        const declared = new RegExp(`^\\s*output\\s+${ref.output}\\s`, 'm').test(mask(src(target)));
        assert.ok(declared, `${file}:${ref.line} uses ${ref.symbol}.outputs.${ref.output}, which ${target} does not declare`);
      }
    }
  });

  void it('main.bicep is subscription-scoped, creates the resource group with the azd-env-name tag, and names from resourceToken', () => {
    const main = src(MAIN);
    assert.match(main, /^targetScope = 'subscription'$/m);
    assert.match(main, /var resourceToken = toLower\(uniqueString\(subscription\(\)\.id, environmentName, location\)\)/);
    assert.match(main, /var tags = \{\s*'azd-env-name': environmentName\s*\}/);
    const rg = only('Microsoft.Resources/resourceGroups');
    expectProperty(rg, ['tags'], 'tags');
    const site = only('Microsoft.Web/sites');
    assert.match(site.body.text, /'azd-service-name': serviceName/, 'the function app carries azd-service-name');
    const api = modules(main).find((m) => resolveFrom(MAIN, m.path) === site.file);
    assert.equal(api && entries(main, api.paramsBlock!).find((e) => e.key === 'serviceName')?.value, "'api'");
  });

  void it('declares every output azd and docs/DEPLOY.md rely on', () => {
    const expected = [
      'AZURE_LOCATION', 'AZURE_TENANT_ID', 'AZURE_RESOURCE_GROUP', 'AZURE_FUNCTION_APP_NAME', 'SERVICE_API_NAME',
      'SERVICE_API_URI', 'AZURE_STORAGE_ACCOUNT_NAME', 'AZURE_STORAGE_BLOB_ENDPOINT', 'AZURE_STORAGE_QUEUE_ENDPOINT',
      'AZURE_SERVICEBUS_NAMESPACE', 'AZURE_SERVICEBUS_FQDN', 'AZURE_MANAGED_IDENTITY_CLIENT_ID',
      'APPLICATIONINSIGHTS_CONNECTION_STRING',
    ];
    const code = mask(src(MAIN));
    for (const name of expected) assert.match(code, new RegExp(`^output ${name} string = \\S`, 'm'), `output ${name}`);
    assert.doesNotMatch(src(MAIN), /@secure\(\)\s*output/, 'no output is marked secret');
  });

  void it('main.parameters.json feeds declared params with azd substitutions whose defaults match Bicep', () => {
    const json = JSON.parse(readRepoFile('infra/main.parameters.json')) as { parameters: Record<string, { value: unknown }> };
    assert.deepEqual(json.parameters.environmentName, { value: '${AZURE_ENV_NAME}' });
    assert.deepEqual(json.parameters.location, { value: '${AZURE_LOCATION}' });
    for (const [name, { value }] of Object.entries(json.parameters)) {
      const p = mainParams.get(name);
      assert.ok(p, `main.parameters.json sets ${name}, which main.bicep does not declare`);
      const fallback = typeof value === 'string' ? /^\$\{[A-Z0-9_]+=(.*)\}$/.exec(value)?.[1] : undefined;
      if (fallback !== undefined) {
        assert.equal(fallback, p.defaultText?.replace(/^'|'$/g, ''), `${name}: azd fallback ${fallback} differs from the Bicep default ${p.defaultText}`);
      }
    }
  });

  void it('azure.yaml: service api, TypeScript, Azure Functions, project at the repo root', () => {
    const yaml = readRepoFile('azure.yaml');
    assert.match(yaml, /^services:\n {2}api:\n(?: {4}.*\n)*? {4}project: \.\n/m);
    assert.match(yaml, /^ {4}language: (ts|js)$/m);
    assert.match(yaml, /^ {4}host: function$/m);
  });
});

void describe('infra: secure defaults', () => {
  void it('storage account: no shared keys, no public blobs, HTTPS and TLS 1.2 only', () => {
    const account = only('Microsoft.Storage/storageAccounts');
    expectProperty(account, ['properties', 'allowSharedKeyAccess'], 'false');
    expectProperty(account, ['properties', 'allowBlobPublicAccess'], 'false');
    expectProperty(account, ['properties', 'supportsHttpsTrafficOnly'], 'true');
    expectProperty(account, ['properties', 'minimumTlsVersion'], "'TLS1_2'");
  });

  void it('Service Bus: Standard tier, SAS auth off, TLS 1.2', () => {
    const namespaces = resourcesOfType('Microsoft.ServiceBus/namespaces');
    assert.ok(namespaces.length >= 1);
    for (const ns of namespaces) {
      expectProperty(ns, ['sku', 'name'], "'Standard'");
      expectProperty(ns, ['properties', 'disableLocalAuth'], 'true');
      expectProperty(ns, ['properties', 'minimumTlsVersion'], "'1.2'");
    }
  });

  void it('function app: HTTPS only, FTPS off, TLS 1.2, basic publishing credentials off', () => {
    const site = only('Microsoft.Web/sites');
    expectProperty(site, ['properties', 'httpsOnly'], 'true');
    expectProperty(site, ['properties', 'siteConfig', 'ftpsState'], "'Disabled'");
    expectProperty(site, ['properties', 'siteConfig', 'minTlsVersion'], "'1.2'");
    const policies = resourcesOfType('Microsoft.Web/sites/basicPublishingCredentialsPolicies');
    for (const kind of ['ftp', 'scm']) {
      const policy = policies.find((p) => propertyAt(src(p.file), p.body, ['name']) === `'${kind}'`);
      assert.ok(policy, `no ${kind} basicPublishingCredentialsPolicies`);
      expectProperty(policy, ['properties', 'allow'], 'false');
      expectProperty(policy, ['parent'], site.symbol);
    }
  });

  void it('Application Insights: local auth off, so telemetry needs the identity (Entra auth)', () => {
    expectProperty(only('Microsoft.Insights/components'), ['properties', 'DisableLocalAuth'], 'true');
    assert.equal(appSettings.get('APPLICATIONINSIGHTS_AUTHENTICATION_STRING'), "'ClientId=${identityClientId};Authorization=AAD'");
  });

  void it('no keys or SAS anywhere: no listKeys(, AccountKey, SharedAccessKey; connection strings only for Application Insights', () => {
    for (const file of files) {
      const text = src(file);
      const code = mask(text);
      for (const banned of [/listKeys\s*\(/i, /AccountKey\s*=/i, /SharedAccessKey/i, /DefaultEndpointsProtocol/i, /listConnectionStrings/i]) {
        const m = banned.exec(text);
        assert.equal(m, null, `${file}:${m ? lineOf(text, m.index) : 0} contains ${m?.[0]}`);
      }
      code.split('\n').forEach((line, i) => {
        if (/connection_?string/i.test(line)) {
          assert.match(line, /applicationinsights/i, `${file}:${i + 1} names a connection string that is not Application Insights'`);
        }
      });
    }
    // A bare connection name (no __suffix) as an app setting holds a connection string, i.e. a key.
    const bare = /^[ \t]*'?(AzureWebJobsStorage|StorageConnection|ServiceBusConnection|WEBSITE_CONTENTAZUREFILECONNECTIONSTRING)'?[ \t]*:/m;
    for (const file of files) {
      const m = bare.exec(src(file));
      assert.equal(m, null, `${file}:${m ? lineOf(src(file), m.index) : 0} sets ${m?.[1]} as a connection string`);
    }
  });
});

void describe('infra: identity and roles', () => {
  // Built-in role definition ids (stable across tenants) and the resource type each is scoped to.
  const expectedRoles = [
    { id: 'b7e6dc6d-f1e8-4753-8033-0f276bb0955b', role: 'Storage Blob Data Owner', scope: 'Microsoft.Storage/storageAccounts' },
    { id: '974c5e8b-45b9-4653-ba55-5f855dd0fb88', role: 'Storage Queue Data Contributor', scope: 'Microsoft.Storage/storageAccounts' },
    // Namespace-wide on the primary; per backlog queue on the secondary (infra/app/backlog-queue-roles.bicep).
    { id: '69a216fc-b8fb-44d8-bc22-1f3c2cd27a39', role: 'Azure Service Bus Data Sender', scope: 'Microsoft.ServiceBus/namespaces', alsoScope: 'Microsoft.ServiceBus/namespaces/queues' },
    { id: '4f6d3b9b-027b-4f4c-9142-0e5a2a2247e0', role: 'Azure Service Bus Data Receiver', scope: 'Microsoft.ServiceBus/namespaces', alsoScope: 'Microsoft.ServiceBus/namespaces/queues' },
    { id: '3913510d-42f4-4e42-8a64-420c390055eb', role: 'Monitoring Metrics Publisher', scope: 'Microsoft.Insights/components' },
  ];

  /** Whether a block uses a role id: the literal itself, a `var x = 'id'`, or a `key: 'id'` entry of a var object. */
  function usesRole(text: string, block: Block, id: string): boolean {
    if (block.text.includes(`'${id}'`)) return true;
    const symbols: string[] = [];
    for (const m of text.matchAll(new RegExp(`^\\s*var\\s+(\\w+)\\s*=\\s*'${id}'`, 'gm'))) symbols.push(m[1]!);
    for (const m of text.matchAll(new RegExp(`^\\s*(\\w+):\\s*'${id}'`, 'gm'))) {
      const owner = [...text.slice(0, m.index).matchAll(/^\s*var\s+(\w+)\s*=\s*\{/gm)].pop();
      if (owner) symbols.push(`${owner[1]}.${m[1]}`);
    }
    return symbols.some((sym) => new RegExp(`(^|[^\\w.])${sym.replace('.', '\\.')}(?!\\w)`).test(block.code));
  }

  function scopeType(file: string, block: Block): string | undefined {
    const scope = propertyAt(src(file), block, ['scope']);
    return allResources.find((r) => r.file === file && r.symbol === scope)?.type;
  }

  for (const expected of expectedRoles as { id: string; role: string; scope: string; alsoScope?: string }[]) {
    const scopes = [expected.scope, ...(expected.alsoScope ? [expected.alsoScope] : [])];
    void it(`${expected.role} is granted to the app identity, scoped to one ${scopes.join(' or one ')}`, () => {
      const holders = files.filter((f) => src(f).includes(expected.id));
      assert.ok(holders.length > 0, `role id ${expected.id} (${expected.role}) appears nowhere`);
      let granted = false;
      for (const file of holders) {
        const text = src(file);
        const idLine = text.split('\n').find((l) => l.includes(expected.id))!;
        assert.ok(idLine.includes(`// ${expected.role}`), `${file}: the line with ${expected.id} should say // ${expected.role}`);
        for (const ra of resources(text).filter((r) => r.type === 'Microsoft.Authorization/roleAssignments')) {
          if (!usesRole(text, ra.body, expected.id)) continue;
          const type = scopeType(file, ra.body);
          assert.ok(type !== undefined && scopes.includes(type), `${file}:${ra.line} ${ra.symbol} grants ${expected.role} outside a ${scopes.join(' or ')} (${type ?? 'no scope'})`);
          if (propertyAt(text, ra.body, ['properties', 'principalId']) === 'identityPrincipalId') granted = true;
        }
      }
      assert.ok(granted, `no role assignment gives ${expected.role} to identityPrincipalId`);
    });
  }

  void it('every role assignment is scoped to a single resource, never a resource group or subscription', () => {
    const assignments = allResources.filter((r) => r.type === 'Microsoft.Authorization/roleAssignments');
    assert.ok(assignments.length >= expectedRoles.length);
    for (const ra of assignments) {
      assert.ok(scopeType(ra.file, ra.body), `${ra.file}:${ra.line} ${ra.symbol} has no scope: <resource> (it would apply to the whole resource group)`);
      assert.match(propertyAt(src(ra.file), ra.body, ['properties', 'roleDefinitionId']) ?? '', /^subscriptionResourceId\('Microsoft\.Authorization\/roleDefinitions', /);
    }
  });

  void it('the function app runs as one user-assigned identity, also used for the Flex deployment storage', () => {
    only('Microsoft.ManagedIdentity/userAssignedIdentities');
    const site = only('Microsoft.Web/sites');
    expectProperty(site, ['identity', 'type'], "'UserAssigned'");
    assert.match(site.body.text, /type: 'UserAssignedIdentity'\s+userAssignedIdentityResourceId: identityId/);
    // identityPrincipalId, which the role checks above look for, is that identity's principal.
    const passing = modules(src(MAIN)).filter((m) => m.paramKeys.includes('identityPrincipalId'));
    assert.deepEqual(passing.map((m) => m.symbol).sort(), ['rbac', 'scaleAgent', 'sendAvailability'], 'rbac.bicep grants the app its data roles, scale-agent.bicep its one management role on the site, send-availability.bicep its roles on the backlog queues');
    for (const m of passing) {
      assert.equal(entries(src(MAIN), m.paramsBlock!).find((e) => e.key === 'identityPrincipalId')?.value, 'identity.outputs.principalId', m.symbol);
    }
  });
});

void describe('infra: names and settings the app relies on', () => {
  void it('Service Bus entities come from infra/servicebus-entities.json (loadJsonContent), which agrees with shared/names.ts', () => {
    const main = src(MAIN);
    const load = jsonContentLoads(MAIN, main).find((l) => l.path === 'infra/servicebus-entities.json');
    assert.ok(load, 'main.bicep loads infra/servicebus-entities.json with loadJsonContent');
    assert.match(main, new RegExp(`topics: ${load.symbol}\\.topics`), 'the loaded topics are what the namespace module provisions');

    const json = JSON.parse(readRepoFile('infra/servicebus-entities.json')) as {
      topics: { name: string; subscriptions: { name: string; filter: Record<string, string> | null; lockDuration: string; maxDeliveryCount: number }[] }[];
    };
    const subscriptions = json.topics.find((t) => t.name === TOPIC)?.subscriptions ?? assert.fail(`topic ${TOPIC} is not in the entity file`);
    for (const sub of Object.values(SUBSCRIPTIONS)) {
      const entry = subscriptions.find((s) => s.name === sub.name);
      assert.ok(entry, `subscription ${sub.name}`);
      assert.deepEqual(entry.filter, sub.role === undefined ? null : { role: sub.role });
    }
  });

  void it('subscriptions take their settings from the JSON; a filter replaces $Default as a SQL-free CorrelationFilter', () => {
    const subs = only('Microsoft.ServiceBus/namespaces/topics/subscriptions');
    const text = src(subs.file);
    const loopVar = /\bfor\s+(\w+)\s+in\s+topic\.subscriptions/.exec(mask(text))?.[1];
    assert.ok(loopVar, 'subscriptions loop over topic.subscriptions');
    for (const field of ['lockDuration', 'maxDeliveryCount', 'deadLetteringOnMessageExpiration']) {
      expectProperty(subs, ['properties', field], `${loopVar}.${field}`);
    }
    const rule = only('Microsoft.ServiceBus/namespaces/topics/subscriptions/rules');
    expectProperty(rule, ['name'], "'$Default'");
    expectProperty(rule, ['properties', 'filterType'], "'CorrelationFilter'");
    assert.match(propertyAt(text, rule.body, ['properties', 'correlationFilter', 'properties']) ?? '', /^\w+\.filter$/);
    assert.doesNotMatch(text, /sqlFilter|sqlExpression/i, 'no SQL filters');
  });

  void it('the scale subscription (the scaling agent\'s load signal) keeps 10 minutes of events and drops, not dead-letters, older ones', () => {
    const json = JSON.parse(readRepoFile('infra/servicebus-entities.json')) as {
      topics: { name: string; subscriptions: { name: string; defaultMessageTimeToLive?: string; deadLetteringOnMessageExpiration: boolean }[] }[];
    };
    const scale = json.topics.find((t) => t.name === TOPIC)?.subscriptions.find((s) => s.name === SUBSCRIPTIONS.scale.name);
    assert.equal(scale?.defaultMessageTimeToLive, 'PT10M');
    assert.equal(scale.deadLetteringOnMessageExpiration, false, 'an expired load signal must not pile up in the dead-letter queue');
    // The Bicep subscription takes the subscription's own TTL before the topic's.
    const subs = only('Microsoft.ServiceBus/namespaces/topics/subscriptions');
    assert.match(propertyAt(src(subs.file), subs.body, ['properties', 'defaultMessageTimeToLive']) ?? '', /^\w+\.\?defaultMessageTimeToLive \?\? /);
  });

  void it('every container in CONTAINERS is provisioned, plus a deployment container', () => {
    const text = src('infra/core/storage/storage-account.bicep');
    assert.deepEqual(provisionedContainers(text).sort(), [...CONTAINERS].sort());
    assert.match(text, /for container in concat\(appContainers, \[deploymentContainerName\]\)/);
    assert.match(src(MAIN), /var deploymentContainerName = 'app-package-/);
  });

  void it('queues follow shared/names.ts: work-{p} per partition, results, and a -poison twin of each', () => {
    const code = src('infra/core/storage/storage-account.bicep');
    for (const partitions of [1, 4, 64]) {
      assert.deepEqual(provisionedQueues(code, partitions).sort(), entityNames('', partitions).allQueues().sort(), `partitions = ${partitions}`);
    }
    const storageModule = modules(src(MAIN)).find((m) => m.path.endsWith('storage-account.bicep'))!;
    assert.equal(entries(src(MAIN), storageModule.paramsBlock!).find((e) => e.key === 'partitions')?.value, 'partitions');
  });

  void it('PUSHDRAIN_PARTITIONS and PUSHDRAIN_SWEEP_SCHEDULE come from params with the app defaults', () => {
    assert.equal(appSettings.get('PUSHDRAIN_PARTITIONS'), 'string(partitions)');
    assert.equal(mainParams.get('partitions')?.defaultText, String(TUNING_SPECS.find((s) => s.key === 'partitions')!.def));
    assert.equal(appSettings.get('PUSHDRAIN_SWEEP_SCHEDULE'), 'sweepSchedule');
    assert.equal(mainParams.get('sweepSchedule')?.defaultText, "'0 */5 * * * *'");
  });

  // Infra exposes every tuning setting as a parameter: derived, so a new setting cannot be forgotten.
  const EXPOSED = TUNING_SPECS.map((s) => s.setting);

  void it('each exposed tuning setting is a param whose default and range match TUNING_SPECS', () => {
    for (const setting of EXPOSED) {
      assert.ok(TUNING_SPECS.some((s) => s.setting === setting), `${setting} is no longer in TUNING_SPECS`);
      assert.ok(appSettings.has(setting), `${setting} is not set on the function app`);
    }
    const exposed = TUNING_SPECS.filter((s) => appSettings.has(s.setting));
    for (const spec of exposed) {
      const param = /^string\((\w+)\)$/.exec(appSettings.get(spec.setting)!)?.[1];
      assert.ok(param, `${spec.setting} should be string(<param>), is ${appSettings.get(spec.setting)}`);
      const p = mainParams.get(param);
      assert.ok(p, `${spec.setting}: param ${param} is not declared in main.bicep`);
      assert.equal(p.type, 'int', `${param} type`);
      assert.equal(Number(p.defaultText), spec.def, `${param} default`);
      const min = decoratorNumber(p, 'minValue');
      const max = decoratorNumber(p, 'maxValue');
      assert.ok(min !== undefined && min >= spec.min, `${param} @minValue ${min} must be within the app's ${spec.min}`);
      assert.ok(max !== undefined && max <= spec.max, `${param} @maxValue ${max} must be within the app's ${spec.max}`);
    }
    // That infra sets nothing the app does not read is checked in test/deploy-readiness.test.ts.
  });

  void it('the drain budget stays under functionTimeout (10 minutes) with time to hand over', () => {
    const budget = mainParams.get('drainBudgetSeconds')!;
    assert.equal(Number(budget.defaultText), 240);
    const cap = decoratorNumber(budget, 'maxValue')!;
    assert.ok(cap <= 540, `@maxValue ${cap} leaves under a minute before a 10-minute timeout`);
    // The plan defaults differ (Flex and Premium: 30 min), so host.json must say it.
    const host = JSON.parse(readRepoFile('host.json')) as { functionTimeout?: string };
    const parts = /^(\d{2}):(\d{2}):(\d{2})$/.exec(host.functionTimeout ?? '');
    assert.ok(parts, `host.json functionTimeout should be hh:mm:ss, is ${host.functionTimeout ?? 'absent'}`);
    const timeout = Number(parts[1]) * 3600 + Number(parts[2]) * 60 + Number(parts[3]);
    assert.ok(cap + 60 <= timeout, `drain budget cap ${cap}s vs functionTimeout ${timeout}s`);
  });

  void it("host.json's maxConcurrentCalls leaves room above one live drain per default partition", () => {
    // A drain invocation holds its Service Bus call while its tasks back off; an instance runs one
    // drain per queue (later events for that queue join it). If every call is held, the next
    // batch's WorkDetected cannot be delivered, so it cannot join the live drains and waits for
    // their next back-off receive (the warm-latency spread BENCHMARKS.md measured). Under a deep
    // backlog, held fan-out events fill the rest on purpose (docs/DESIGN.md, "Scale-out").
    const host = JSON.parse(readRepoFile('host.json')) as { extensions?: { serviceBus?: { maxConcurrentCalls?: number } } };
    const calls = host.extensions?.serviceBus?.maxConcurrentCalls ?? 0;
    const longRunning = Number(mainParams.get('partitions')!.defaultText) + Number(mainParams.get('resultsDrainSlots')!.defaultText);
    assert.ok(calls >= 2 * longRunning, `maxConcurrentCalls ${calls} vs ${longRunning} drains that can each hold a call`);
  });

  void it('the scaling agent is configured from the template itself: its site, plan, identity, ceiling and SCALE_SPECS bounds', () => {
    const expected: Record<string, string> = {
      PUSHDRAIN_SCALE_MODE: 'scaleAgentMode',
      PUSHDRAIN_SCALE_PLAN: 'hostingPlan',
      PUSHDRAIN_SCALE_SUBSCRIPTION_ID: 'subscription().subscriptionId',
      PUSHDRAIN_SCALE_RESOURCE_GROUP: 'rg.name',
      PUSHDRAIN_SCALE_SITE_NAME: 'functionAppName',
      PUSHDRAIN_SCALE_CLIENT_ID: 'identity.outputs.clientId',
      PUSHDRAIN_SCALE_RULES: 'scaleRules',
      PUSHDRAIN_SCALE_MAX_INSTANCES: "string(hostingPlan == 'flex' ? maximumInstanceCount : premiumMaximumElasticWorkerCount)",
    };
    for (const [key, value] of Object.entries(expected)) assert.equal(appSettings.get(key), value, key);
    // The site name is the one the app is deployed as.
    const api = modules(src(MAIN)).find((m) => m.symbol === 'api')!;
    assert.equal(entries(src(MAIN), api.paramsBlock!).find((e) => e.key === 'name')?.value, 'functionAppName');
    for (const spec of SCALE_SPECS.filter((x) => x.key !== 'maxInstances')) {
      const param = /^string\((\w+)\)$/.exec(appSettings.get(spec.setting) ?? '')?.[1];
      assert.ok(param, `${spec.setting} should be string(<param>)`);
      const p = mainParams.get(param)!;
      assert.equal(Number(p.defaultText), spec.def, `${param} default`);
      assert.ok(decoratorNumber(p, 'minValue')! >= spec.min && decoratorNumber(p, 'maxValue')! <= spec.max, `${param} range within ${spec.min}–${spec.max}`);
    }
    assert.equal(mainParams.get('scaleAgentMode')?.defaultText, "'dry-run'", 'dry-run unless switched on');
    assert.equal(mainParams.get('scaleRules')?.defaultText, "'512:1,4096:2,16384:4,65536:8'");
  });

  void it("the scaling agent's role: a custom role with exactly the plan's two actions, assigned on the site to the app identity", () => {
    const file = 'infra/app/scale-agent.bicep';
    const text = src(file);
    const def = resources(text).find((r) => r.type === 'Microsoft.Authorization/roleDefinitions')!;
    assert.ok(def, 'a custom role definition');
    assert.equal(propertyAt(text, def.body, ['properties', 'type']), "'CustomRole'");
    assert.match(def.body.text, /assignableScopes:\s*\[\s*resourceGroup\(\)\.id\s*\]/);
    assert.match(text, /var actions = hostingPlan == 'flex' \? \[\s*'Microsoft\.Web\/sites\/read'\s*'Microsoft\.Web\/sites\/write'\s*\] : \[\s*'Microsoft\.Web\/sites\/config\/read'\s*'Microsoft\.Web\/sites\/config\/write'\s*\]/);
    assert.doesNotMatch(text, /\*'/, 'no wildcard action');
    const ra = resources(text).find((r) => r.type === 'Microsoft.Authorization/roleAssignments')!;
    assert.equal(propertyAt(text, ra.body, ['scope']), 'site');
    assert.equal(resources(text).find((r) => r.symbol === 'site')?.type, 'Microsoft.Web/sites');
    assert.equal(propertyAt(text, ra.body, ['properties', 'principalId']), 'identityPrincipalId');
    assert.equal(propertyAt(text, ra.body, ['properties', 'roleDefinitionId']), "subscriptionResourceId('Microsoft.Authorization/roleDefinitions', agentRole.name)");
    const wiring = modules(src(MAIN)).find((m) => m.symbol === 'scaleAgent')!;
    const args = Object.fromEntries(entries(src(MAIN), wiring.paramsBlock!).map((e) => [e.key, e.value]));
    assert.deepEqual(args, { siteName: 'api.outputs.name', identityPrincipalId: 'identity.outputs.principalId', hostingPlan: 'hostingPlan' });
  });

  void it('connections are identity-based: the host, Storage and Service Bus all use the managed identity', () => {
    const expected: Record<string, RegExp> = {
      AzureWebJobsStorage__accountName: /^storageAccountName$/,
      AzureWebJobsStorage__credential: /^'managedidentity'$/,
      AzureWebJobsStorage__clientId: /^identityClientId$/,
      StorageConnection__blobServiceUri: /^storage\.outputs\.blobEndpoint$/,
      StorageConnection__queueServiceUri: /^storage\.outputs\.queueEndpoint$/,
      StorageConnection__credential: /^'managedidentity'$/,
      StorageConnection__clientId: /^identity\.outputs\.clientId$/,
      ServiceBusConnection__fullyQualifiedNamespace: /^serviceBus\.outputs\.fullyQualifiedNamespace$/,
      ServiceBusConnection__credential: /^'managedidentity'$/,
      ServiceBusConnection__clientId: /^identity\.outputs\.clientId$/,
    };
    for (const [key, value] of Object.entries(expected)) {
      assert.match(appSettings.get(key) ?? '(absent)', value, key);
    }
  });

  void it('Flex Consumption by default (Node 20 in functionAppConfig), Elastic Premium on request (linuxFxVersion Node|20)', () => {
    const plan = mainParams.get('hostingPlan');
    assert.equal(plan?.defaultText, "'flex'");
    assert.deepEqual([...(plan?.decorators.find((d) => d.name === 'allowed')?.args.matchAll(/'(\w+)'/g) ?? [])].map((m) => m[1]), ['flex', 'premium']);
    const farm = only('Microsoft.Web/serverfarms');
    assert.match(farm.body.text, /name: 'FC1'\s+tier: 'FlexConsumption'/);
    assert.match(farm.body.text, /name: 'EP1'\s+tier: 'ElasticPremium'/);
    const site = only('Microsoft.Web/sites');
    assert.match(site.body.text, /runtime: \{\s+name: 'node'\s+version: '20'\s+\}/);
    assert.match(propertyAt(src(site.file), site.body, ['properties', 'siteConfig', 'linuxFxVersion']) ?? '', /'Node\|20'/);
  });

  void it('docs/DEPLOY.md documents every parameter of main.bicep in its table', () => {
    const doc = readRepoFile('docs/DEPLOY.md');
    for (const name of mainParams.keys()) assert.match(doc, new RegExp(`^\\| \`${name}\` \\|`, 'm'), `no table row for ${name}`);
  });

  void it('the lifecycle rules expire archive/ and the work/ and results/ intermediates, never manifests or reports, and are documented', () => {
    const rules = resourcesOfType('Microsoft.Storage/storageAccounts/managementPolicies');
    assert.equal(rules.length, 1);
    assert.match(rules[0]!.body.text, /rules: lifecycleRules/);
    const code = src('infra/core/storage/storage-account.bicep');
    const prefixes = [...code.matchAll(/prefixMatch: \[([^\]]*)\]/g)].flatMap((m) => [...m[1]!.matchAll(/'([^']*)'/g)].map((p) => p[1]));
    assert.deepEqual(prefixes.sort(), ['archive/', 'results/', 'work/']);
    assert.match(code, /var lifecycleRules = concat\(archiveRetentionDays > 0 \? \[archiveRule\] : \[\], intermediateRetentionDays > 0 \? \[intermediateRule\] : \[\]\)/);
    const doc = readRepoFile('docs/DEPLOY.md');
    for (const p of ['archiveRetentionDays', 'intermediateRetentionDays']) assert.match(doc, new RegExp(p));
  });
});

void describe('infra: workflows', () => {
  void it('CI runs npm ci && npm test on Node 20; deploy logs in with OIDC and checks the template before deploying', () => {
    const ci = readRepoFile('.github/workflows/ci.yml');
    assert.match(ci, /node-version: ['"]?20/);
    assert.match(ci, /npm ci/);
    assert.match(ci, /npm test/);
    const deploy = readRepoFile('.github/workflows/deploy.yml');
    assert.match(deploy, /id-token: write/);
    assert.match(deploy, /uses: azure\/login@/);
    assert.match(deploy, /az bicep build --file infra\/main\.bicep/);
    assert.match(deploy, /az deployment sub what-if/);
    const pkg = JSON.parse(readRepoFile('package.json')) as Record<string, Record<string, string> | undefined>;
    const deps = { ...pkg.dependencies, ...pkg.devDependencies };
    assert.ok(!('azure-functions-core-tools' in deps), 'Core Tools belong to the runner, not the project');
  });
});

void describe('infra: send availability (the secondary namespace)', () => {
  const MODULE = 'infra/app/send-availability.bicep';
  const ROLES = 'infra/app/backlog-queue-roles.bicep';

  void it('off by default: the module, its settings and its output all hang on enableSecondaryNamespace', () => {
    assert.equal(mainParams.get('enableSecondaryNamespace')?.defaultText, 'false');
    assert.match(src(MAIN), /^module sendAvailability 'app\/send-availability\.bicep' = if \(enableSecondaryNamespace\) \{/m);
    const secondary = functionAppSettings(src, files).filter((x) => x.key.startsWith('ServiceBusSecondaryConnection__'));
    assert.deepEqual(
      secondary.map((x) => [x.key, x.value, x.conditional]),
      [
        ['ServiceBusSecondaryConnection__fullyQualifiedNamespace', 'sendAvailability.outputs.fullyQualifiedNamespace', true],
        ['ServiceBusSecondaryConnection__credential', "'managedidentity'", true],
        ['ServiceBusSecondaryConnection__clientId', 'identity.outputs.clientId', true],
      ],
    );
    assert.match(src(MAIN), /var sendAvailabilitySettings = enableSecondaryNamespace \? \{/);
    assert.match(src(MAIN), /^output AZURE_SERVICEBUS_SECONDARY_FQDN string = enableSecondaryNamespace \? sendAvailability\.outputs\.fullyQualifiedNamespace : ''$/m);
  });

  void it('the secondary holds only the backlog queues, with the properties of infra/servicebus-backlog-queue.json (which the development broker serves too)', () => {
    const text = src(MODULE);
    const load = jsonContentLoads(MODULE, text).find((l) => l.path === 'infra/servicebus-backlog-queue.json');
    assert.ok(load, `${MODULE} loads infra/servicebus-backlog-queue.json`);
    const json = JSON.parse(readRepoFile('infra/servicebus-backlog-queue.json')) as Record<string, unknown>;
    for (const field of Object.keys(json).filter((k) => !k.startsWith('$'))) {
      assert.match(text, new RegExp(`\\b${field}: ${load.symbol}\\.${field}\\b`), `each backlog queue takes ${field} from the JSON`);
    }
    assert.deepEqual(backlogEntities(3).queues, backlogQueues(3).map((name) => ({ ...Object.fromEntries(Object.entries(json).filter(([k]) => !k.startsWith('$'))), name })));
    const ns = modules(text).find((m) => resolveFrom(MODULE, m.path) === 'infra/core/messaging/servicebus-namespace.bicep');
    assert.ok(ns?.paramsBlock, 'the secondary is a servicebus-namespace module (Standard, SAS off, TLS 1.2)');
    assert.equal(entries(text, ns.paramsBlock).find((e) => e.key === 'topics')?.value, '[]', 'no topic: receivers read only the primary');
    assert.equal(entries(text, ns.paramsBlock).find((e) => e.key === 'queues')?.value, 'queues');
    assert.equal(mainParams.get('backlogQueueCount')?.defaultText, String(TUNING_SPECS.find((t) => t.key === 'backlogQueueCount')!.def));
  });

  void it('least privilege: Sender and Receiver for the app identity on each backlog queue, nothing namespace-wide on the secondary', () => {
    const looped = modules(src(MODULE)).find((m) => resolveFrom(MODULE, m.path) === ROLES);
    assert.ok(looped, `${MODULE} grants through ${ROLES}`);
    assert.match(src(MODULE), /module queueRoles 'backlog-queue-roles\.bicep' = \[\s*for queue in queues:/);
    assert.deepEqual(resources(src(MODULE)).filter((r) => r.type === 'Microsoft.Authorization/roleAssignments'), [], 'no grant on the namespace itself');
    const grants = resources(src(ROLES)).filter((r) => r.type === 'Microsoft.Authorization/roleAssignments');
    const app = grants.filter((r) => propertyAt(src(ROLES), r.body, ['properties', 'principalId']) === 'identityPrincipalId');
    assert.deepEqual(app.map((r) => r.symbol).sort(), ['appReceiver', 'appSender']);
    for (const r of grants) expectProperty({ ...r, file: ROLES }, ['scope'], 'queue');
    const queue = resources(src(ROLES)).find((r) => r.symbol === 'queue');
    assert.equal(queue?.type, 'Microsoft.ServiceBus/namespaces/queues');
  });
});
