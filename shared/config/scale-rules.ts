/**
 * The scaling agent's settings that are not plain numbers: its mode, the plan it talks to,
 * the site it manages, and its rule table (depth → always-ready instances), in the spirit of
 * the source article's GetOptimalDequeueTaskCount, but configurable.
 */
import { ConfigError } from '../errors';
import type { Env, IdentityOptions } from './connections';

/** off: the trigger completes events and does nothing; dry-run (default): decide and log the request; apply: send it. */
type ScaleMode = 'off' | 'dry-run' | 'apply';
export type ScalePlan = 'flex' | 'premium';

/** From this many queued messages (summed over the input queues) on, keep `instances` ready. */
export interface ScaleRule {
  depth: number;
  instances: number;
}

export interface ScaleSite {
  subscriptionId: string;
  resourceGroup: string;
  siteName: string;
}

export interface ScaleSettings {
  mode: ScaleMode;
  plan: ScalePlan;
  /** Undefined until all three PUSHDRAIN_SCALE_* target settings are set; `apply` needs it. */
  site: ScaleSite | undefined;
  /** Identity for the management API (the app's user-assigned identity in Azure). */
  identity: IdentityOptions;
  /** Ascending by depth. */
  rules: ScaleRule[];
  minInstances: number;
  maxInstances: number;
  intervalSeconds: number;
  upCooldownSeconds: number;
  downCooldownSeconds: number;
}

/** Roughly 1 M, 8 M, 32 M and 128 M transactions queued at the default chunk size of 2,000. */
const DEFAULT_SCALE_RULES = '512:1,4096:2,16384:4,65536:8';

/** Parses `depth:instances` pairs separated by commas, e.g. `512:1,4096:2`; depths strictly rising. */
export function parseScaleRules(setting: string, raw: string): ScaleRule[] {
  const rules: ScaleRule[] = [];
  for (const part of raw.split(',')) {
    const m = /^\s*(\d{1,9})\s*:\s*(\d{1,4})\s*$/.exec(part);
    if (!m?.[1] || m[2] === undefined)
      throw new ConfigError(setting, `expected depth:instances pairs separated by commas, got "${part.trim()}"`);
    const rule = { depth: Number(m[1]), instances: Number(m[2]) };
    const last = rules[rules.length - 1];
    if (rule.depth < 1)
      throw new ConfigError(setting, 'depths start at 1 (below the first depth the floor is the minimum)');
    if (last && rule.depth <= last.depth)
      throw new ConfigError(setting, `depths must rise: ${rule.depth} after ${last.depth}`);
    if (last && rule.instances < last.instances)
      throw new ConfigError(
        setting,
        `instances must not fall as depth rises: ${rule.instances} after ${last.instances}`,
      );
    rules.push(rule);
  }
  return rules;
}

/** The always-ready floor a total depth asks for, within [min, max]. */
export function floorFor(depth: number, rules: readonly ScaleRule[], min: number, max: number): number {
  let wanted = 0;
  for (const r of rules) if (depth >= r.depth) wanted = r.instances;
  return Math.min(max, Math.max(min, wanted));
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._()-]{0,89}$/;
const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function oneOf<T extends string>(env: Env, setting: string, allowed: readonly T[], def: T): T {
  const raw = env[setting]?.trim();
  if (raw === undefined || raw === '') return def;
  if (!(allowed as readonly string[]).includes(raw))
    throw new ConfigError(setting, `must be one of ${allowed.join(', ')}, got "${raw}"`);
  return raw as T;
}

/** The site the agent manages; the values become URL path segments, so they are validated. */
function site(env: Env): ScaleSite | undefined {
  const subscriptionId = env.PUSHDRAIN_SCALE_SUBSCRIPTION_ID?.trim() ?? '';
  const resourceGroup = env.PUSHDRAIN_SCALE_RESOURCE_GROUP?.trim() ?? '';
  const siteName = env.PUSHDRAIN_SCALE_SITE_NAME?.trim() ?? '';
  if (subscriptionId === '' && resourceGroup === '' && siteName === '') return undefined;
  if (!GUID.test(subscriptionId))
    throw new ConfigError('PUSHDRAIN_SCALE_SUBSCRIPTION_ID', 'must be a subscription id (a GUID)');
  if (!NAME.test(resourceGroup))
    throw new ConfigError(
      'PUSHDRAIN_SCALE_RESOURCE_GROUP',
      'must be a resource group name (1-90 of A-Z a-z 0-9 . _ ( ) -)',
    );
  if (!/^[A-Za-z0-9][A-Za-z0-9-]{0,59}$/.test(siteName))
    throw new ConfigError('PUSHDRAIN_SCALE_SITE_NAME', 'must be a function app name (1-60 of A-Z a-z 0-9 -)');
  return { subscriptionId, resourceGroup, siteName };
}

/** Everything but the named numeric limits, which settings.ts reads from its SCALE_SPECS table. */
export function scaleChoices(env: Env): Pick<ScaleSettings, 'mode' | 'plan' | 'site' | 'identity' | 'rules'> {
  const mode = oneOf(env, 'PUSHDRAIN_SCALE_MODE', ['off', 'dry-run', 'apply'] as const, 'dry-run');
  const target = site(env);
  if (mode === 'apply' && !target) {
    throw new ConfigError(
      'PUSHDRAIN_SCALE_MODE',
      'apply needs PUSHDRAIN_SCALE_SUBSCRIPTION_ID, PUSHDRAIN_SCALE_RESOURCE_GROUP and PUSHDRAIN_SCALE_SITE_NAME',
    );
  }
  const clientId = env.PUSHDRAIN_SCALE_CLIENT_ID?.trim();
  const raw = env.PUSHDRAIN_SCALE_RULES?.trim();
  return {
    mode,
    plan: oneOf(env, 'PUSHDRAIN_SCALE_PLAN', ['flex', 'premium'] as const, 'flex'),
    site: target,
    identity: clientId ? { credential: 'managedidentity', clientId } : {},
    rules: parseScaleRules('PUSHDRAIN_SCALE_RULES', raw && raw !== '' ? raw : DEFAULT_SCALE_RULES),
  };
}
