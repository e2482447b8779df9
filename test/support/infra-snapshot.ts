/**
 * What Azure would receive: the resources `bicep snapshot` predicts for infra/main.bicep with each
 * variant's parameters (infra/snapshots/<variant>.bicepparam), evaluated for a fixed tenant,
 * subscription and location. `npm run infra:check` fails when a committed snapshot is stale, so
 * these are the values the template produces, not a reading of its text. Values that exist only
 * once deployed (an identity's client id, an endpoint) stay ARM expressions: "[reference(…)]".
 */
import { readRepoFile } from './repo';

/** One .bicepparam per variant, so that both sides of every `if` in infra/ are evaluated. */
export const VARIANTS = ['default', 'secondary', 'premium', 'scale-agent', 'webhooks'] as const;
export type Variant = (typeof VARIANTS)[number];

export interface PredictedResource {
  id: string;
  type: string;
  name: string;
  apiVersion: string;
  location?: string;
  kind?: string;
  sku?: { name?: string; tier?: string };
  tags?: Record<string, string>;
  identity?: { type?: string; userAssignedIdentities?: Record<string, unknown> };
  properties?: Record<string, unknown>;
}

export interface Snapshot {
  predictedResources: PredictedResource[];
  diagnostics: unknown[];
  outputs: Record<string, unknown>;
}

const loaded = new Map<Variant, Snapshot>();

export function snapshot(variant: Variant = 'default'): Snapshot {
  let s = loaded.get(variant);
  if (!s) {
    s = JSON.parse(readRepoFile(`infra/snapshots/${variant}.snapshot.json`)) as Snapshot;
    loaded.set(variant, s);
  }
  return s;
}

export function resourcesOf(type: string, variant: Variant = 'default'): PredictedResource[] {
  return snapshot(variant).predictedResources.filter((r) => r.type === type);
}

export function onlyOf(type: string, variant: Variant = 'default'): PredictedResource {
  const found = resourcesOf(type, variant);
  if (found.length !== 1) throw new Error(`${variant} snapshot: expected one ${type}, found ${found.length}`);
  return found[0]!;
}

/** A value ARM computes at deployment ("[reference(…)]"), not one the snapshot could evaluate. */
export const isDeployTime = (value: unknown): boolean => typeof value === 'string' && value.startsWith('[');

/** The last segment of a child resource's name (`account/default/work-0` → `work-0`). */
export const leafName = (r: PredictedResource): string => r.name.split('/').pop()!;

/** The function app's settings as deployed in one variant. */
export function appSettingsOf(variant: Variant = 'default'): Record<string, string> {
  const config = resourcesOf('Microsoft.Web/sites/config', variant).filter((r) => r.name.endsWith('/appsettings'));
  if (config.length !== 1)
    throw new Error(`${variant} snapshot: expected one appsettings config, found ${config.length}`);
  return config[0]!.properties as Record<string, string>;
}

export interface DeployedSetting {
  key: string;
  value: string;
  /** The variant it is read from: the default one, or the first that sets it. */
  variant: Variant;
  /** Absent from the default deployment: only a variant's flag sets it. */
  conditional: boolean;
}

/** Every app setting of every variant: the default's, then those only a variant adds. */
export function deployedSettings(): DeployedSetting[] {
  const out: DeployedSetting[] = [];
  const seen = new Set<string>();
  for (const variant of VARIANTS) {
    for (const [key, value] of Object.entries(appSettingsOf(variant))) {
      if (seen.has(key)) continue;
      seen.add(key);
      out.push({ key, value, variant, conditional: variant !== 'default' });
    }
  }
  return out;
}

export interface RoleAssignment {
  /** Resource id the assignment is scoped to. */
  scope: string;
  /** The role definition's GUID. */
  role: string;
  principalId: string;
  principalType: string;
}

/**
 * Role assignments with their scope: an extension resource's id is `<scope>/providers/Microsoft.
 * Authorization/roleAssignments/<name>`, or, while its name waits for a deployed value,
 * extensionResourceId('<scope>', 'Microsoft.Authorization/roleAssignments', <name>).
 */
export function roleAssignmentsOf(variant: Variant = 'default'): RoleAssignment[] {
  return resourcesOf('Microsoft.Authorization/roleAssignments', variant).map((r) => {
    const scope =
      /^\[extensionResourceId\('([^']+)', 'Microsoft\.Authorization\/roleAssignments', /.exec(r.id)?.[1] ??
      /^(\/subscriptions\/.+)\/providers\/Microsoft\.Authorization\/roleAssignments\/[^/]+$/.exec(r.id)?.[1];
    if (!scope) throw new Error(`${variant} snapshot: role assignment with no scope: ${r.id}`);
    const p = r.properties as { roleDefinitionId: string; principalId: string; principalType: string };
    return {
      scope,
      role: p.roleDefinitionId.split('/').pop()!,
      principalId: p.principalId,
      principalType: p.principalType,
    };
  });
}

/** The resource a scope id names, in the same snapshot. */
export function resourceById(id: string, variant: Variant = 'default'): PredictedResource | undefined {
  return snapshot(variant).predictedResources.find((r) => r.id.toLowerCase() === id.toLowerCase());
}
