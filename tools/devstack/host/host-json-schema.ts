/**
 * host.json held against what the Functions host documents: the host.json reference (version 2.x)
 * and the published schema (SchemaStore src/schemas/json/host.json, `version-2`), with the ranges
 * the host and the SDKs enforce when they bind it: functionTimeout (ScriptJobHostOptionsSetup:
 * at least 1 s; -1 or unbounded on Flex Consumption and Premium), Service Bus retry options
 * (Azure.Messaging.ServiceBus ServiceBusRetryOptions: maxRetries 0–100, delay 1 ms–5 min,
 * tryTimeout 0–1 h, maxDelay not negative) and processor options (maxConcurrentCalls ≥ 1,
 * prefetchCount ≥ 0). An unknown key is usually ignored by the host without a word, so a
 * misspelled setting silently keeps its default: here it is an error with the key's path.
 * Sections this app does not use are known by name and not checked further.
 */
import { parseTimeSpan } from './dotnet-timespan';

export interface HostJsonProblem {
  /** Dotted path of the key, e.g. `extensions.serviceBus.maxConcurrentCalls`. */
  path: string;
  message: string;
}

type Leaf = (value: unknown) => string | undefined;
interface ObjectSpec {
  props: Record<string, Spec>;
  /** Spec for keys not in `props` (a map such as logLevel); absent means unknown keys are errors. */
  additional?: Spec;
}
type Spec = Leaf | ObjectSpec | 'unchecked';

const describe = (v: unknown): string => JSON.stringify(v);

const bool: Leaf = (v) => (typeof v === 'boolean' ? undefined : `must be true or false, not ${describe(v)}`);
const string: Leaf = (v) => (typeof v === 'string' ? undefined : `must be a string, not ${describe(v)}`);
const oneOf =
  (values: readonly string[], ignoreCase = false): Leaf =>
  (v) => {
    const ok =
      typeof v === 'string' && values.some((x) => (ignoreCase ? x.toLowerCase() === v.toLowerCase() : x === v));
    return ok ? undefined : `must be one of ${values.join(', ')}, not ${describe(v)}`;
  };
const integer =
  (min: number, max = Number.MAX_SAFE_INTEGER): Leaf =>
  (v) =>
    typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max
      ? undefined
      : `must be an integer from ${min}${max === Number.MAX_SAFE_INTEGER ? ' up' : ` to ${max}`}, not ${describe(v)}`;
const number =
  (min: number, max: number): Leaf =>
  (v) =>
    typeof v === 'number' && v >= min && v <= max
      ? undefined
      : `must be a number from ${min} to ${max}, not ${describe(v)}`;
const fmt = (ms: number): string =>
  ms === 0 ? '0' : ms % 60_000 === 0 ? `${ms / 60_000} min` : ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
const timespan =
  (minMs: number, maxMs = Infinity, { minusOne = false } = {}): Leaf =>
  (v) => {
    const ms = typeof v === 'string' ? parseTimeSpan(v) : undefined;
    if (ms === undefined) return `must be a .NET TimeSpan string such as "00:05:00", not ${describe(v)}`;
    if (minusOne && ms === -86_400_000) return undefined;
    if (ms < minMs || ms > maxMs)
      return `must be from ${fmt(minMs)}${maxMs === Infinity ? ' up' : ` to ${fmt(maxMs)}`}, not ${describe(v)}`;
    return undefined;
  };
const semicolonList =
  (values: readonly string[]): Leaf =>
  (v) => {
    if (typeof v !== 'string') return `must be a string, not ${describe(v)}`;
    const bad = v.split(';').filter((x) => x.trim() !== '' && !values.includes(x.trim()));
    return bad.length === 0 ? undefined : `holds ${bad.join(', ')}; the types are ${values.join(', ')}`;
  };

const LOG_LEVELS = ['Trace', 'Debug', 'Information', 'Warning', 'Error', 'Critical', 'None'];
const TELEMETRY_TYPES = ['Dependency', 'Event', 'Exception', 'PageView', 'Request', 'Trace'];
const samplingPercentage = number(0, 100);

const SERVICE_BUS: ObjectSpec = {
  props: {
    prefetchCount: integer(0),
    autoCompleteMessages: bool,
    maxConcurrentCalls: integer(1),
    maxConcurrentSessions: integer(1),
    maxMessageBatchSize: integer(1),
    minMessageBatchSize: integer(1),
    maxBatchWaitTime: timespan(0),
    maxAutoLockRenewalDuration: timespan(0),
    sessionIdleTimeout: timespan(0),
    transportType: oneOf(['amqpTcp', 'amqpWebSockets'], true),
    webProxy: string,
    enableCrossEntityTransactions: bool,
    clientRetryOptions: {
      props: {
        mode: oneOf(['Exponential', 'Fixed'], true),
        tryTimeout: timespan(0, 3_600_000),
        delay: timespan(1, 300_000),
        maxDelay: timespan(0),
        maxRetries: integer(0, 100),
      },
    },
  },
};

const HOST_JSON_SPEC: ObjectSpec = {
  props: {
    version: oneOf(['2.0']),
    functionTimeout: timespan(1000, Infinity, { minusOne: true }),
    telemetryMode: oneOf(['OpenTelemetry']),
    extensionBundle: {
      props: {
        id: oneOf([
          'Microsoft.Azure.Functions.ExtensionBundle',
          'Microsoft.Azure.Functions.ExtensionBundle.Preview',
          'Microsoft.Azure.Functions.ExtensionBundle.Experimental',
        ]),
        version: (v) =>
          typeof v === 'string' && /^[[(]\s*\d+(\.(\d+|\*))*\s*,\s*\d+(\.\d+)*\s*[\])]$/.test(v)
            ? undefined
            : `must be a version range such as "[4.*, 5.0.0)", not ${describe(v)}`,
      },
    },
    logging: {
      props: {
        fileLoggingMode: oneOf(['debugOnly', 'always', 'never']),
        logLevel: { props: {}, additional: oneOf(LOG_LEVELS) },
        console: { props: { isEnabled: bool } },
        applicationInsights: {
          props: {
            samplingSettings: {
              props: {
                isEnabled: bool,
                maxTelemetryItemsPerSecond: number(0, Number.MAX_SAFE_INTEGER),
                evaluationInterval: timespan(0),
                initialSamplingPercentage: samplingPercentage,
                minSamplingPercentage: samplingPercentage,
                maxSamplingPercentage: samplingPercentage,
                samplingPercentageIncreaseTimeout: timespan(0),
                samplingPercentageDecreaseTimeout: timespan(0),
                movingAverageRatio: number(0, 1),
                excludedTypes: semicolonList(TELEMETRY_TYPES),
                includedTypes: semicolonList(TELEMETRY_TYPES),
              },
            },
            enableLiveMetrics: bool,
            enableLiveMetricsFilters: bool,
            enableDependencyTracking: bool,
            enablePerformanceCountersCollection: bool,
            enableMetricsCustomDimensionOptimization: bool,
            httpAutoCollectionOptions: 'unchecked',
            snapshotConfiguration: 'unchecked',
          },
        },
      },
    },
    extensions: {
      props: {
        http: {
          props: {
            routePrefix: string,
            maxConcurrentRequests: integer(-1),
            maxOutstandingRequests: integer(-1),
            dynamicThrottlesEnabled: bool,
            hsts: 'unchecked',
            customHeaders: 'unchecked',
          },
        },
        serviceBus: SERVICE_BUS,
        queues: 'unchecked',
        blobs: 'unchecked',
        eventHubs: 'unchecked',
        durableTask: 'unchecked',
        cosmosDB: 'unchecked',
        sendGrid: 'unchecked',
        mcp: 'unchecked',
      },
    },
    aggregator: 'unchecked',
    functions: 'unchecked',
    healthMonitor: 'unchecked',
    languageWorker: 'unchecked',
    managedDependency: 'unchecked',
    retry: 'unchecked',
    customHandler: 'unchecked',
    singleton: 'unchecked',
    watchDirectories: 'unchecked',
    watchFiles: 'unchecked',
    concurrency: 'unchecked',
    sendCanceledInvocationsToWorker: 'unchecked',
    configurationProfile: 'unchecked',
  },
};

/** Edit distance, for "did you mean": small strings only. */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const next = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = row[j]!;
      row[j] = next;
    }
  }
  return row[b.length]!;
}

function unknownKey(key: string, known: string[]): string {
  const sameIgnoringCase = known.find((k) => k.toLowerCase() === key.toLowerCase());
  if (sameIgnoringCase) return `is spelled ${sameIgnoringCase} in the host.json reference`;
  const d = (k: string): number => distance(k.toLowerCase(), key.toLowerCase());
  const best = Math.min(...known.map(d));
  const near = best <= 2 ? known.filter((k) => d(k) === best) : [];
  return `is not a host.json setting${near.length > 0 ? ` (did you mean ${near.join(' or ')}?)` : ''}`;
}

function walk(value: unknown, spec: Spec, path: string, out: HostJsonProblem[]): void {
  if (spec === 'unchecked') return;
  if (typeof spec === 'function') {
    const message = spec(value);
    if (message) out.push({ path, message });
    return;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    out.push({ path, message: `must be an object, not ${describe(value)}` });
    return;
  }
  for (const [key, v] of Object.entries(value)) {
    const at = path === '' ? key : `${path}.${key}`;
    const child = spec.props[key] ?? spec.additional;
    if (child) walk(v, child, at, out);
    else out.push({ path: at, message: unknownKey(key, Object.keys(spec.props)) });
  }
}

/** Every problem in a parsed host.json, by the key's path; `version` is required. */
/**
 * `telemetryMode: OpenTelemetry` hands the host's logs and traces to OpenTelemetry: the classic
 * Application Insights settings (sampling among them) then configure nothing, and keeping them
 * beside it is the misconfiguration the Functions team warns of. Sampling is the SDK's
 * (OTEL_TRACES_SAMPLER), in the worker.
 */
function checkTelemetryMode(hostJson: object, out: HostJsonProblem[]): void {
  const logging = (hostJson as { logging?: unknown }).logging;
  if ((hostJson as { telemetryMode?: unknown }).telemetryMode !== 'OpenTelemetry') return;
  if (typeof logging === 'object' && logging !== null && 'applicationInsights' in logging)
    out.push({
      path: 'logging.applicationInsights',
      message: 'configures nothing with telemetryMode OpenTelemetry: remove it (sample with OTEL_TRACES_SAMPLER)',
    });
}

export function checkHostJson(hostJson: unknown): HostJsonProblem[] {
  const out: HostJsonProblem[] = [];
  walk(hostJson, HOST_JSON_SPEC, '', out);
  if (typeof hostJson === 'object' && hostJson !== null) {
    if (!('version' in hostJson)) out.push({ path: 'version', message: 'is required ("2.0")' });
    checkTelemetryMode(hostJson, out);
  }
  return out;
}
