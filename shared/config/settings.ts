/**
 * One typed, validated view of the app settings. Built once at start-up; a bad value
 * fails there with a message that names the setting (never later, mid-drain).
 */
import { z } from 'zod';

import { ConfigError } from '../errors';
import { backlogQueues } from '../names';
import { type AuthSettings, authSettings } from './auth-settings';
import type { Env, ServiceBusConnection, StorageConnection } from './connections';
import { serviceBusConnection, storageConnection } from './connections';
import { type NamedLimit, namedLimits, parseEnv, wholeNumber } from './env-schema';
import { type EventSettings, eventSettings } from './event-settings';
import { type PriceSettings, priceSettings } from './price-settings';
import { scaleChoices, type ScaleSettings } from './scale-rules';
import { DEFAULT_TAX_RATES, parseTaxRates, type TaxRates } from './tax-rates';

/**
 * The tuning settings, each declared once: its environment name, default and range (see
 * env-schema.ts). The schema is the type (Tuning), the defaults and the checks.
 */
const tuningShape = z.object({
  /** Input queues `work-0…work-{P-1}`. */
  partitions: wholeNumber('PUSHDRAIN_PARTITIONS', { def: 4, min: 1, max: 64 }),
  /** The largest chunk blob (one queue message each), in transactions; each batch's size is chosen below it (ingest/chunk-size.ts). */
  chunkSize: wholeNumber('PUSHDRAIN_CHUNK_SIZE', { def: 20_000, min: 1, max: 100_000 }),
  /** Messages per `receiveMessages` call; Azure caps it at 32. */
  dequeueBatchSize: wholeNumber('PUSHDRAIN_DEQUEUE_BATCH_SIZE', { def: 32, min: 1, max: 32 }),
  /** How long a received message stays invisible while it is processed. */
  visibilityTimeoutSeconds: wholeNumber('PUSHDRAIN_VISIBILITY_TIMEOUT_SECONDS', {
    def: 60,
    min: 1,
    max: 7 * 24 * 3600,
  }),
  /** First back-off delay after a failed receive; a drained queue ends a dequeue task at once, with no wait. */
  minIdleMs: wholeNumber('PUSHDRAIN_MIN_IDLE_MS', { def: 100, min: 0, max: 60_000 }),
  /** Back-off cap: a dequeue task whose failed receives push the delay up to it exits. */
  maxIdleMs: wholeNumber('PUSHDRAIN_MAX_IDLE_MS', { def: 5000, min: 1, max: 600_000 }),
  /** Dequeue tasks one drain may run at once. */
  maxDequeueTasks: wholeNumber('PUSHDRAIN_MAX_DEQUEUE_TASKS', { def: 8, min: 1, max: 64 }),
  /** Task-count rule: one task per this many queued messages (bounded by maxDequeueTasks). */
  messagesPerTask: wholeNumber('PUSHDRAIN_MESSAGES_PER_TASK', { def: 64, min: 1, max: 1_000_000 }),
  /** Concurrent drains per queue (blob-lease slots), across all instances. */
  drainSlots: wholeNumber('PUSHDRAIN_DRAIN_SLOTS', { def: 16, min: 1, max: 64 }),
  /**
   * Fan-out rule: a deep queue wants one drain per this many queued messages (at most
   * drainSlots); the drain holding slot 0 publishes the extra ones as fan-out events.
   */
  messagesPerDrain: wholeNumber('PUSHDRAIN_MESSAGES_PER_DRAIN', { def: 512, min: 1, max: 1_000_000 }),
  /**
   * Concurrent drains of the results queue, across all instances: each folds into the batch's
   * one manifest with If-Match, so more would only add conflicts.
   */
  resultsDrainSlots: wholeNumber('PUSHDRAIN_RESULTS_DRAIN_SLOTS', { def: 2, min: 1, max: 16 }),
  /** Deliveries after which a message is moved to `{queue}-poison`. */
  maxDequeueCount: wholeNumber('PUSHDRAIN_MAX_DEQUEUE_COUNT', { def: 5, min: 1, max: 100 }),
  /** A drain stops taking work after this long and hands over with a continuation event. */
  drainBudgetSeconds: wholeNumber('PUSHDRAIN_DRAIN_BUDGET_SECONDS', { def: 240, min: 1, max: 3600 }),
  /** Largest accepted request body as sent (compressed or not): 100 MiB. */
  maxBodyBytes: wholeNumber('PUSHDRAIN_MAX_BODY_BYTES', { def: 100 * 1024 * 1024, min: 1024, max: 1024 * 1024 * 1024 }),
  /** Largest body after gzip inflation (the gzip-bomb guard): 256 MiB. */
  maxInflatedBytes: wholeNumber('PUSHDRAIN_MAX_INFLATED_BYTES', {
    def: 256 * 1024 * 1024,
    min: 1024,
    max: 2 * 1024 * 1024 * 1024,
  }),
  /** Batch files the incoming/ sweep ingests per run. */
  sweepMaxFiles: wholeNumber('PUSHDRAIN_SWEEP_MAX_FILES', { def: 10, min: 1, max: 1000 }),
  /** Open batches the sweep's recovery looks at per run. */
  sweepMaxBatches: wholeNumber('PUSHDRAIN_SWEEP_MAX_BATCHES', { def: 100, min: 1, max: 5000 }),
  /** First watchdog check of an accepted batch, this long after acceptance. */
  watchdogSlaSeconds: wholeNumber('PUSHDRAIN_WATCHDOG_SLA_SECONDS', { def: 600, min: 1, max: 7 * 24 * 3600 }),
  /** Watchdog checks (doubling the delay each time) before an unfinished batch is failed. */
  watchdogMaxChecks: wholeNumber('PUSHDRAIN_WATCHDOG_MAX_CHECKS', { def: 5, min: 1, max: 20 }),
  /**
   * An ingest claim with no heartbeat for this long belongs to a request that died, and the client's
   * retry with the same Idempotency-Key takes it over (until then it is answered 409 with Retry-After).
   * The heartbeat beats six times per window. Shorter: a retry after a crash waits less, and each
   * ingesting request writes its manifest more often.
   */
  ingestClaimStaleSeconds: wholeNumber('PUSHDRAIN_INGEST_CLAIM_STALE_SECONDS', { def: 30, min: 3, max: 3600 }),
  /** The sweep repairs an open batch with no chunk settled for this long (lost events, lost pointers). */
  stallSeconds: wholeNumber('PUSHDRAIN_STALL_SECONDS', { def: 180, min: 1, max: 7 * 24 * 3600 }),
  /** Backlog queues `backlog-0…` in the secondary namespace (each one is a syphon trigger). */
  backlogQueueCount: wholeNumber('PUSHDRAIN_BACKLOG_QUEUE_COUNT', { def: 2, min: 1, max: 10 }),
  /** Per entity: how long send failures are tolerated before sends go to the secondary; 0 = at once. */
  failoverIntervalMs: wholeNumber('PUSHDRAIN_FAILOVER_INTERVAL_MS', { def: 60_000, min: 0, max: 3_600_000 }),
  /** While failed over: how often the primary is pinged (a link opened, nothing sent). */
  pingIntervalMs: wholeNumber('PUSHDRAIN_PING_INTERVAL_MS', { def: 10_000, min: 100, max: 600_000 }),
});

/** With the cross-field rules that a single range cannot express. */
const tuningSchema = tuningShape.superRefine((t, ctx) => {
  if (t.maxIdleMs < t.minIdleMs)
    ctx.addIssue({
      code: 'custom',
      path: ['maxIdleMs'],
      message: `must be at least PUSHDRAIN_MIN_IDLE_MS (${t.minIdleMs})`,
    });
  if (t.maxInflatedBytes < t.maxBodyBytes)
    ctx.addIssue({
      code: 'custom',
      path: ['maxInflatedBytes'],
      message: `must be at least PUSHDRAIN_MAX_BODY_BYTES (${t.maxBodyBytes})`,
    });
});

export type Tuning = z.output<typeof tuningShape>;

export interface Settings {
  storage: StorageConnection;
  /** Undefined when no ServiceBusConnection is configured (events then cannot be published). */
  serviceBus: ServiceBusConnection | undefined;
  /** The secondary namespace for send availability; undefined = the feature is off. */
  serviceBusSecondary: ServiceBusConnection | undefined;
  /** Prefix for every queue and container name (test isolation). @defaultValue '' */
  namePrefix: string;
  taxRates: TaxRates;
  tuning: Tuning;
  /** What the process runs in (PUSHDRAIN_INSTANCE_MEMORY_MB). */
  instance: { memoryMb: number };
  /** The scaling agent (a consumer of the `scale` subscription). */
  scale: ScaleSettings;
  /** Batch events: webhooks, their secret, the retry schedule, callback origins. */
  events: EventSettings;
  /** Who may call the HTTP routes (PUSHDRAIN_AUTH and the token settings). */
  auth: AuthSettings;
  /** List prices for a batch's cost estimate (PUSHDRAIN_PRICE_*). */
  prices: PriceSettings;
}

/** The declared tuning settings, for the docs and infra/ checks. */
export const TUNING_SPECS: readonly NamedLimit<keyof Tuning>[] = namedLimits(tuningShape);

/** The scaling agent's limits (instance bounds fit both plans: Flex allows up to 1,000). */
/**
 * The instance's memory, MB, of which a share bounds the batch data a process holds at once
 * (shared/util/memory-budget.ts). infra sets it from the deployment's Flex instance size, not from
 * a tuning default; 0: the process's memory limit (its cgroup), else the machine's memory.
 */
const instanceSchema = z.object({
  memoryMb: wholeNumber('PUSHDRAIN_INSTANCE_MEMORY_MB', { def: 0, min: 0, max: 1_048_576 }),
});

const scaleLimitsSchema = z
  .object({
    minInstances: wholeNumber('PUSHDRAIN_SCALE_MIN_INSTANCES', { def: 0, min: 0, max: 1000 }),
    maxInstances: wholeNumber('PUSHDRAIN_SCALE_MAX_INSTANCES', { def: 100, min: 1, max: 1000 }),
    intervalSeconds: wholeNumber('PUSHDRAIN_SCALE_INTERVAL_SECONDS', { def: 30, min: 5, max: 3600 }),
    upCooldownSeconds: wholeNumber('PUSHDRAIN_SCALE_UP_COOLDOWN_SECONDS', { def: 60, min: 0, max: 86_400 }),
    downCooldownSeconds: wholeNumber('PUSHDRAIN_SCALE_DOWN_COOLDOWN_SECONDS', { def: 900, min: 60, max: 86_400 }),
  })
  .superRefine((l, ctx) => {
    if (l.minInstances > l.maxInstances)
      ctx.addIssue({
        code: 'custom',
        path: ['minInstances'],
        message: `must be at most PUSHDRAIN_SCALE_MAX_INSTANCES (${l.maxInstances})`,
      });
  });

/** The declared scaling-agent limits, for the infra/ checks. */
export const SCALE_SPECS = namedLimits(scaleLimitsSchema);

/**
 * Flex Consumption's lowest maximum instance count: the platform refuses a `maximumInstanceCount`
 * below it (infra/main.bicep's `maximumInstanceCount` says the same), so an agent told a lower
 * ceiling would ask Azure for a site Azure refuses.
 */
export const FLEX_MIN_MAX_INSTANCES = 40;

/** The connection of the secondary namespace (send availability); unset turns the feature off. */
export const SECONDARY_CONNECTION = 'ServiceBusSecondaryConnection';

export function defaultTuning(): Tuning {
  return parseEnv(tuningSchema, {});
}

export function loadSettings(env: Env = process.env): Settings {
  const tuning = parseEnv(tuningSchema, env);
  const namePrefix = env.PUSHDRAIN_NAME_PREFIX?.trim() ?? '';
  // Queue names: 3–63 chars of [a-z0-9-]; leave room for "work-63-poison".
  if (!/^([a-z0-9][a-z0-9-]{0,38})?$/.test(namePrefix) || namePrefix.includes('--')) {
    throw new ConfigError(
      'PUSHDRAIN_NAME_PREFIX',
      'must be up to 39 chars of a-z, 0-9 and single dashes, starting with a letter or digit',
    );
  }
  const taxRaw = env.PUSHDRAIN_TAX_RATES;
  const limits = parseEnv(scaleLimitsSchema, env);
  const scale = scaleChoices(env);
  if (scale.plan === 'flex' && limits.maxInstances < FLEX_MIN_MAX_INSTANCES)
    throw new ConfigError(
      'PUSHDRAIN_SCALE_MAX_INSTANCES',
      `must be at least ${FLEX_MIN_MAX_INSTANCES} on Flex Consumption (PUSHDRAIN_SCALE_PLAN=flex), its lowest maximum instance count; got ${limits.maxInstances}`,
    );
  return {
    storage: storageConnection(env),
    serviceBus: serviceBusConnection(env),
    serviceBusSecondary: serviceBusConnection(env, SECONDARY_CONNECTION),
    namePrefix,
    taxRates: taxRaw && taxRaw.trim() !== '' ? parseTaxRates('PUSHDRAIN_TAX_RATES', taxRaw) : { ...DEFAULT_TAX_RATES },
    tuning,
    instance: parseEnv(instanceSchema, env),
    scale: { ...scale, ...limits },
    events: eventSettings(env),
    auth: authSettings(env),
    prices: priceSettings(env),
  };
}

/**
 * The backlog queues the syphon serves: none unless a secondary namespace is configured. Read at
 * module load (trigger registration), so it reads only the two settings it needs.
 */
export function syphonQueues(env: Env = process.env): string[] {
  return serviceBusConnection(env, SECONDARY_CONNECTION) ? backlogQueues(backlogQueueCount(env)) : [];
}

/** PUSHDRAIN_BACKLOG_QUEUE_COUNT alone, validated like every tuning setting. */
export function backlogQueueCount(env: Env): number {
  return parseEnv(tuningShape.pick({ backlogQueueCount: true }), env).backlogQueueCount;
}
