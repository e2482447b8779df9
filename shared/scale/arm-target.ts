/**
 * The management-API adapter: applies a scale decision to the function app through the
 * official @azure/arm-appservice client (its pipeline: token, user agent, no retries of its
 * own, because a 429 must reach the agent with its Retry-After).
 *
 * - Flex Consumption: the site's `functionAppConfig.scaleAndConcurrency`, i.e. the always-ready
 *   entry `function:drain` and `maximumInstanceCount`. A PATCH replaces `functionAppConfig` as a
 *   whole, and the generated client's patch model has no such property, so the adapter reads the
 *   site's JSON and sends it back with only those two values changed (every other always-ready
 *   entry, the deployment and the runtime stay as read).
 * - Elastic Premium: `config/web` `minimumElasticInstanceCount` and `functionAppScaleLimit`,
 *   through the typed getConfiguration/updateConfiguration.
 *
 * The SDK (45 MB, ~0.4 s to load) is required when a client is built, not imported: the app
 * builds one on the first apply only (lazyArmScaleTarget), so drain instances never pay for it
 * and the dry-run describes requests without it.
 */
import type * as AppService from '@azure/arm-appservice';
import {
  createDefaultHttpClient,
  createHttpHeaders,
  createPipelineRequest,
  type HttpClient,
  isRestError,
  type PipelineResponse,
  type TlsSettings,
} from '@azure/core-rest-pipeline';
import type { TokenCredential } from '@azure/identity';

import type { ScalePlan, ScaleSettings, ScaleSite } from '../config/scale-rules';
import { AccessDeniedError, PermanentError, TransientError } from '../errors';
import { ARM_ENDPOINT, premiumBody, ScaleRequests } from './requests';
import type { ArmRequest, ScaleDecision, ScaleTarget } from './target';

const DEFAULT_RETRY_AFTER_MS = 60_000;

/** Retry-After in seconds or as an HTTP date; a missing or odd value means a minute. */
function retryAfterMs(value: string | undefined, now: number = Date.now()): number {
  if (value === undefined || value.trim() === '') return DEFAULT_RETRY_AFTER_MS;
  const seconds = Number(value.trim());
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? DEFAULT_RETRY_AFTER_MS : Math.max(0, at - now);
}

function failure(status: number, what: string, retryAfter: string | undefined, cause?: unknown): Error {
  if (status === 429) return new TransientError(`${what}: throttled (429)`, retryAfterMs(retryAfter), { cause });
  if (status === 403)
    return new AccessDeniedError(
      `${what}: 403 Forbidden: the app's identity may not change the function app's scale settings (grant it the scaling agent's role on the site)`,
      { cause },
    );
  if (status >= 500 || status === 408) return new TransientError(`${what}: HTTP ${status}`, undefined, { cause });
  return new PermanentError(`${what}: HTTP ${status}`, { cause });
}

/** Maps a RestError of the typed client the same way as a raw response. */
function mapped(e: unknown, what: string): Error {
  if (isRestError(e) && e.statusCode !== undefined)
    return failure(e.statusCode, what, e.response?.headers.get('retry-after'), e);
  return e instanceof Error ? e : new Error(String(e));
}

export interface ArmClientOptions {
  credential: TokenCredential;
  /** @defaultValue https://management.azure.com */
  endpoint?: string;
  /** Tests: trust a local endpoint's certificate (the client sends tokens over HTTPS only). */
  tlsOptions?: TlsSettings;
}

/**
 * The target for the configured site, or undefined without one: it describes requests at once
 * and builds the client (loading the SDK) on the first apply.
 */
export function lazyArmScaleTarget(
  settings: ScaleSettings,
  drainFunction: string,
  credential: () => TokenCredential,
): ScaleTarget | undefined {
  const site = settings.site;
  if (!site) return undefined;
  const requests = new ScaleRequests(settings.plan, site, ARM_ENDPOINT, drainFunction);
  let target: ArmScaleTarget | undefined;
  return {
    describe: (d) => requests.describe(d),
    apply: (d) => {
      target ??= createArmScaleTarget(settings, site, drainFunction, { credential: credential() });
      return target.apply(d);
    },
  };
}

/** The target for the configured site and plan, over a client with no retries of its own. */
export function createArmScaleTarget(
  settings: ScaleSettings,
  site: ScaleSite,
  drainFunction: string,
  options: ArmClientOptions,
): ArmScaleTarget {
  const endpoint = options.endpoint ?? ARM_ENDPOINT;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { WebSiteManagementClient } = require('@azure/arm-appservice') as typeof AppService;
  const client = new WebSiteManagementClient(options.credential, site.subscriptionId, {
    endpoint,
    retryOptions: { maxRetries: 0 },
    ...(options.tlsOptions ? { tlsOptions: options.tlsOptions } : {}),
  });
  return new ArmScaleTarget({ client, plan: settings.plan, site, endpoint, drainFunction });
}

export interface ArmScaleTargetOptions {
  client: AppService.WebSiteManagementClient;
  plan: ScalePlan;
  site: ScaleSite;
  /** The management endpoint the client was built with, e.g. https://management.azure.com */
  endpoint: string;
  drainFunction: string;
}

export class ArmScaleTarget implements ScaleTarget {
  private readonly requests: ScaleRequests;
  /** The transport under the client's pipeline (the generated client keeps its own private). */
  private readonly http: HttpClient = createDefaultHttpClient();

  private readonly client: AppService.WebSiteManagementClient;
  private readonly site: ScaleSite;

  constructor(o: ArmScaleTargetOptions) {
    this.client = o.client;
    this.site = o.site;
    this.requests = new ScaleRequests(o.plan, o.site, o.endpoint, o.drainFunction);
  }

  describe(d: ScaleDecision): ArmRequest {
    return this.requests.describe(d);
  }

  apply(d: ScaleDecision): Promise<'written' | 'unchanged'> {
    return this.requests.plan === 'premium' ? this.applyPremium(d) : this.applyFlex(d);
  }

  private async applyPremium(d: ScaleDecision): Promise<'written' | 'unchanged'> {
    const { resourceGroup, siteName } = this.site;
    const want = premiumBody(d);
    let current;
    try {
      current = await this.client.webApps.getConfiguration(resourceGroup, siteName);
    } catch (e) {
      throw mapped(e, `reading ${siteName}/config/web`);
    }
    if (
      current.minimumElasticInstanceCount === want.minimumElasticInstanceCount &&
      current.functionAppScaleLimit === want.functionAppScaleLimit
    )
      return 'unchanged';
    try {
      await this.client.webApps.updateConfiguration(resourceGroup, siteName, want);
    } catch (e) {
      throw mapped(e, `updating ${siteName}/config/web`);
    }
    return 'written';
  }

  private async applyFlex(d: ScaleDecision): Promise<'written' | 'unchanged'> {
    const url = this.requests.siteUrl;
    const siteJson = await this.send('GET', url, undefined, `reading site ${this.site.siteName}`);
    const body = this.requests.flexPatch(siteJson, d);
    if (!body) return 'unchanged';
    await this.send('PATCH', url, body, `updating site ${this.site.siteName}`);
    return 'written';
  }

  /** One request through the client's own pipeline (credential, user agent, TLS settings). */
  private async send(method: 'GET' | 'PATCH', url: string, body: unknown, what: string): Promise<unknown> {
    const request = createPipelineRequest({
      url,
      method,
      headers: createHttpHeaders({
        accept: 'application/json',
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      }),
    });
    if (body !== undefined) request.body = JSON.stringify(body);
    let response: PipelineResponse;
    try {
      response = await this.client.pipeline.sendRequest(this.http, request);
    } catch (e) {
      throw mapped(e, what);
    }
    if (response.status < 200 || response.status >= 300)
      throw failure(response.status, what, response.headers.get('retry-after'));
    try {
      return response.bodyAsText ? (JSON.parse(response.bodyAsText) as unknown) : undefined;
    } catch {
      throw new PermanentError(`${what}: the response is not JSON`);
    }
  }
}
