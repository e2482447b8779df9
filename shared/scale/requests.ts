/**
 * The management requests of a scale decision, without the SDK: the dry-run describes them
 * from here (so it never loads @azure/arm-appservice), and the adapter sends them.
 */
import type { ScalePlan, ScaleSite } from '../config/scale-rules';
import { PermanentError } from '../errors';
import type { ArmRequest, ScaleDecision } from './target';

/** The api-version @azure/arm-appservice 19 speaks; the raw Flex requests use the same. */
const ARM_API_VERSION = '2025-05-01';
export const ARM_ENDPOINT = 'https://management.azure.com';

/** Elastic Premium always runs at least one instance; a floor of 0 is written as its minimum. */
const PREMIUM_MIN_FLOOR = 1;

type Json = Record<string, unknown>;

function isRecord(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function premiumBody(d: ScaleDecision): { minimumElasticInstanceCount: number; functionAppScaleLimit: number } {
  return { minimumElasticInstanceCount: Math.max(PREMIUM_MIN_FLOOR, d.floor), functionAppScaleLimit: d.ceiling };
}

export class ScaleRequests {
  /** `…/sites/{name}?api-version=…` */
  readonly siteUrl: string;
  private readonly drainEntry: string;

  constructor(
    readonly plan: ScalePlan,
    site: ScaleSite,
    endpoint: string = ARM_ENDPOINT,
    drainFunction: string,
  ) {
    const path = `/subscriptions/${encodeURIComponent(site.subscriptionId)}/resourceGroups/${encodeURIComponent(site.resourceGroup)}/providers/Microsoft.Web/sites/${encodeURIComponent(site.siteName)}`;
    this.siteUrl = `${endpoint.replace(/\/+$/, '')}${path}?api-version=${ARM_API_VERSION}`;
    this.drainEntry = `function:${drainFunction}`;
  }

  /** The write a decision needs, as it goes on the wire (reads at apply time are not shown). */
  describe(d: ScaleDecision): ArmRequest {
    if (this.plan === 'premium') {
      return { method: 'PATCH', url: this.siteUrl.replace('?', '/config/web?'), body: { properties: premiumBody(d) } };
    }
    return {
      method: 'PATCH',
      url: this.siteUrl,
      body: {
        properties: {
          functionAppConfig: {
            scaleAndConcurrency: {
              alwaysReady: d.floor > 0 ? [{ name: this.drainEntry, instanceCount: d.floor }] : [],
              maximumInstanceCount: d.ceiling,
            },
          },
        },
      },
      note: 'sent with the rest of functionAppConfig and the other alwaysReady entries as read from the site at apply time',
    };
  }

  /**
   * Flex: the PATCH body for a site read as JSON, or undefined when it already matches. A PATCH
   * replaces functionAppConfig whole, so everything read is sent back with two values changed.
   */
  flexPatch(siteJson: unknown, d: ScaleDecision): Json | undefined {
    const props = isRecord(siteJson) ? siteJson.properties : undefined;
    const config = isRecord(props) ? props.functionAppConfig : undefined;
    if (!isRecord(config))
      throw new PermanentError(
        'the site has no functionAppConfig: it is not a Flex Consumption app (set PUSHDRAIN_SCALE_PLAN=premium for Elastic Premium)',
      );
    const scale = isRecord(config.scaleAndConcurrency) ? config.scaleAndConcurrency : {};
    const entries = Array.isArray(scale.alwaysReady) ? (scale.alwaysReady as unknown[]).filter(isRecord) : [];
    const ours = entries.find((e) => e.name === this.drainEntry);
    const floorNow = typeof ours?.instanceCount === 'number' ? ours.instanceCount : 0;
    if (floorNow === d.floor && scale.maximumInstanceCount === d.ceiling) return undefined;
    // Our entry keeps its place; a function without one has the platform's default of 0.
    const alwaysReady = ours
      ? entries.flatMap((e) => (e === ours ? (d.floor > 0 ? [{ ...e, instanceCount: d.floor }] : []) : [e]))
      : [...entries, ...(d.floor > 0 ? [{ name: this.drainEntry, instanceCount: d.floor }] : [])];
    return {
      properties: {
        functionAppConfig: {
          ...config,
          scaleAndConcurrency: { ...scale, alwaysReady, maximumInstanceCount: d.ceiling },
        },
      },
    };
  }
}
