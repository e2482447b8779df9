/**
 * What Flex Consumption refuses or ignores, from Microsoft Learn: the "Flex Consumption plan
 * deprecations" table of the app settings reference (functions-app-settings#flex-consumption-plan-
 * deprecations), the plan's own page (flex-consumption-plan: instance memory, maximum instance
 * count, considerations) and the timer reference (no WEBSITE_TIME_ZONE / TZ on Linux Consumption
 * and Flex). On Flex the runtime, the deployment and the scale limits live in
 * `functionAppConfig`; the settings that used to carry them are refused or silently ignored.
 */

/** App settings never to set on a Flex Consumption app, with what replaces each. */
export const FLEX_REJECTED_SETTINGS: Readonly<Record<string, string>> = {
  ENABLE_ORYX_BUILD: 'the remoteBuild parameter of a Flex deployment',
  FUNCTIONS_EXTENSION_VERSION: 'set by the platform',
  FUNCTIONS_MAX_HTTP_CONCURRENCY: 'functionAppConfig.scaleAndConcurrency.triggers.http.perInstanceConcurrency',
  FUNCTIONS_WORKER_DYNAMIC_CONCURRENCY_ENABLED: 'not valid on Flex',
  FUNCTIONS_WORKER_PROCESS_COUNT: 'not valid on Flex',
  FUNCTIONS_WORKER_RUNTIME: 'functionAppConfig.runtime.name',
  FUNCTIONS_WORKER_RUNTIME_VERSION: 'functionAppConfig.runtime.version',
  SCM_DO_BUILD_DURING_DEPLOYMENT: 'the remoteBuild parameter of a Flex deployment',
  TZ: 'not supported on Flex (schedules run in UTC)',
  WEBSITE_CONTENTAZUREFILECONNECTIONSTRING: 'functionAppConfig.deployment (no content share on Flex)',
  WEBSITE_CONTENTOVERVNET: 'not used for networking on Flex',
  WEBSITE_CONTENTSHARE: 'functionAppConfig.deployment (no content share on Flex)',
  WEBSITE_DNS_SERVER: 'DNS comes from the integrated virtual network',
  WEBSITE_MAX_DYNAMIC_APPLICATION_SCALE_OUT: 'functionAppConfig.scaleAndConcurrency.maximumInstanceCount',
  WEBSITE_MOUNT_ENABLED: 'no content mount on Flex',
  WEBSITE_NODE_DEFAULT_VERSION: 'functionAppConfig.runtime.version',
  WEBSITE_RUN_FROM_PACKAGE: 'functionAppConfig.deployment',
  WEBSITE_SKIP_CONTENTSHARE_VALIDATION: 'no content share on Flex',
  WEBSITE_TIME_ZONE: 'not supported on Flex (schedules run in UTC)',
  WEBSITE_USE_PLACEHOLDER: 'placeholders are the platform’s on Flex',
  WEBSITE_USE_PLACEHOLDER_DOTNETISOLATED: 'placeholders are the platform’s on Flex',
  WEBSITE_VNET_ROUTE_ALL: 'not used for networking on Flex',
};

/** Site configuration properties that Flex refuses or that moved into functionAppConfig. */
export const FLEX_REJECTED_SITE_CONFIG: Readonly<Record<string, string>> = {
  alwaysOn: 'not valid on Flex',
  functionAppScaleLimit: 'functionAppConfig.scaleAndConcurrency.maximumInstanceCount',
  javaVersion: 'functionAppConfig.runtime.version',
  linuxFxVersion: 'functionAppConfig.runtime',
  netFrameworkVersion: 'functionAppConfig.runtime.version',
  powerShellVersion: 'functionAppConfig.runtime.version',
  preWarmedInstanceCount: 'functionAppConfig.scaleAndConcurrency.alwaysReady',
  use32BitWorkerProcess: '32-bit is not supported',
  windowsFxVersion: 'not valid on Flex (Linux only)',
};

/** Flex Consumption's documented limits for the parameters infra/ exposes. */
export const FLEX_LIMITS = {
  /** Instance memory sizes Flex offers (MB). */
  instanceMemoryMB: [512, 2048, 4096],
  /** maximumInstanceCount: at least 40, at most 1,000 per app. */
  maximumInstanceCount: { min: 40, max: 1000 },
  /** triggers.http.perInstanceConcurrency: 1 to 1,000 (the defaults are 4, 16 and 32 by instance size). */
  httpPerInstanceConcurrency: { min: 1, max: 1000 },
} as const;

/** The names in `settings` that Flex refuses, compared as Azure does: ignoring case. */
export function flexRejected(settings: Readonly<Record<string, unknown>>, table = FLEX_REJECTED_SETTINGS): string[] {
  const rejected = new Set(Object.keys(table).map((k) => k.toUpperCase()));
  return Object.entries(settings)
    .filter(([k, v]) => rejected.has(k.toUpperCase()) && v !== null && v !== undefined)
    .map(([k]) => k);
}
