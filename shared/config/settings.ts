/**
 * One typed, validated view of the app settings. Built once at start-up; a bad value
 * fails there with a message that names the setting (never later, mid-drain).
 */
import { ConfigError } from '../errors';
import { backlogQueues } from '../names';
import type { Env, ServiceBusConnection, StorageConnection } from './connections';
import { serviceBusConnection, storageConnection } from './connections';
import { scaleChoices, type ScaleSettings } from './scale-rules';
import { DEFAULT_TAX_RATES, parseTaxRates, type TaxRates } from './tax-rates';

export interface Tuning {
  /** Input queues `work-0…work-{P-1}`. @defaultValue 4 */
  partitions: number;
  /** Transactions per chunk blob (one queue message each). @defaultValue 2000 */
  chunkSize: number;
  /** Messages per `receiveMessages` call; Azure caps it at 32. @defaultValue 32 */
  dequeueBatchSize: number;
  /** How long a received message stays invisible while it is processed. @defaultValue 60 */
  visibilityTimeoutSeconds: number;
  /** First back-off delay when a queue is empty. @defaultValue 100 */
  minIdleMs: number;
  /** Back-off cap; a dequeue task that reaches it exits. @defaultValue 5000 */
  maxIdleMs: number;
  /** Dequeue tasks one drain may run at once. @defaultValue 8 */
  maxDequeueTasks: number;
  /** Task-count rule: one task per this many queued messages (bounded by maxDequeueTasks). @defaultValue 64 */
  messagesPerTask: number;
  /** Concurrent drains per queue (blob-lease slots), across all instances. @defaultValue 16 */
  drainSlots: number;
  /**
   * Concurrent drains of the results queue, across all instances: each folds into the batch's
   * one manifest with If-Match, so more would only add conflicts. @defaultValue 2
   */
  resultsDrainSlots: number;
  /**
   * Fan-out rule: a deep queue wants one drain per this many queued messages (at most
   * drainSlots); the drain holding slot 0 publishes the extra ones as fan-out events. @defaultValue 512
   */
  messagesPerDrain: number;
  /** Deliveries after which a message is moved to `{queue}-poison`. @defaultValue 5 */
  maxDequeueCount: number;
  /** A drain stops taking work after this long and hands over with a continuation event. @defaultValue 240 */
  drainBudgetSeconds: number;
  /** Largest accepted request body as sent (compressed or not). @defaultValue 104857600 (100 MiB) */
  maxBodyBytes: number;
  /** Largest body after gzip inflation (the gzip-bomb guard). @defaultValue 268435456 (256 MiB) */
  maxInflatedBytes: number;
  /** Batch files the incoming/ sweep ingests per run. @defaultValue 10 */
  sweepMaxFiles: number;
  /** Open batches the sweep's recovery looks at per run. @defaultValue 100 */
  sweepMaxBatches: number;
  /** First watchdog check of an accepted batch, this long after acceptance. @defaultValue 600 */
  watchdogSlaSeconds: number;
  /** Watchdog checks (doubling the delay each time) before an unfinished batch is failed. @defaultValue 5 */
  watchdogMaxChecks: number;
  /** The sweep repairs an open batch with no chunk settled for this long (lost events, lost pointers). @defaultValue 180 */
  stallSeconds: number;
  /** Backlog queues `backlog-0…` in the secondary namespace (each one is a syphon trigger). @defaultValue 2 */
  backlogQueueCount: number;
  /** Per entity: how long send failures are tolerated before sends go to the secondary; 0 = at once. @defaultValue 60000 */
  failoverIntervalMs: number;
  /** While failed over: how often the primary is pinged (a link opened, nothing sent). @defaultValue 10000 */
  pingIntervalMs: number;
}

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
  /** The scaling agent (a consumer of the `scale` subscription). */
  scale: ScaleSettings;
}

interface IntSpec<K extends string = keyof Tuning> {
  key: K;
  setting: string;
  def: number;
  min: number;
  max: number;
}

/** Named limits, so the validation and the docs read from the same table. */
export const TUNING_SPECS: readonly IntSpec[] = [
  { key: 'partitions', setting: 'PUSHDRAIN_PARTITIONS', def: 4, min: 1, max: 64 },
  { key: 'chunkSize', setting: 'PUSHDRAIN_CHUNK_SIZE', def: 2000, min: 1, max: 100_000 },
  { key: 'dequeueBatchSize', setting: 'PUSHDRAIN_DEQUEUE_BATCH_SIZE', def: 32, min: 1, max: 32 },
  { key: 'visibilityTimeoutSeconds', setting: 'PUSHDRAIN_VISIBILITY_TIMEOUT_SECONDS', def: 60, min: 1, max: 7 * 24 * 3600 },
  { key: 'minIdleMs', setting: 'PUSHDRAIN_MIN_IDLE_MS', def: 100, min: 0, max: 60_000 },
  { key: 'maxIdleMs', setting: 'PUSHDRAIN_MAX_IDLE_MS', def: 5000, min: 1, max: 600_000 },
  { key: 'maxDequeueTasks', setting: 'PUSHDRAIN_MAX_DEQUEUE_TASKS', def: 8, min: 1, max: 64 },
  { key: 'messagesPerTask', setting: 'PUSHDRAIN_MESSAGES_PER_TASK', def: 64, min: 1, max: 1_000_000 },
  { key: 'drainSlots', setting: 'PUSHDRAIN_DRAIN_SLOTS', def: 16, min: 1, max: 64 },
  { key: 'messagesPerDrain', setting: 'PUSHDRAIN_MESSAGES_PER_DRAIN', def: 512, min: 1, max: 1_000_000 },
  { key: 'resultsDrainSlots', setting: 'PUSHDRAIN_RESULTS_DRAIN_SLOTS', def: 2, min: 1, max: 16 },
  { key: 'maxDequeueCount', setting: 'PUSHDRAIN_MAX_DEQUEUE_COUNT', def: 5, min: 1, max: 100 },
  { key: 'drainBudgetSeconds', setting: 'PUSHDRAIN_DRAIN_BUDGET_SECONDS', def: 240, min: 1, max: 3600 },
  { key: 'maxBodyBytes', setting: 'PUSHDRAIN_MAX_BODY_BYTES', def: 100 * 1024 * 1024, min: 1024, max: 1024 * 1024 * 1024 },
  { key: 'maxInflatedBytes', setting: 'PUSHDRAIN_MAX_INFLATED_BYTES', def: 256 * 1024 * 1024, min: 1024, max: 2 * 1024 * 1024 * 1024 },
  { key: 'sweepMaxFiles', setting: 'PUSHDRAIN_SWEEP_MAX_FILES', def: 10, min: 1, max: 1000 },
  { key: 'sweepMaxBatches', setting: 'PUSHDRAIN_SWEEP_MAX_BATCHES', def: 100, min: 1, max: 5000 },
  { key: 'watchdogSlaSeconds', setting: 'PUSHDRAIN_WATCHDOG_SLA_SECONDS', def: 600, min: 1, max: 7 * 24 * 3600 },
  { key: 'watchdogMaxChecks', setting: 'PUSHDRAIN_WATCHDOG_MAX_CHECKS', def: 5, min: 1, max: 20 },
  { key: 'stallSeconds', setting: 'PUSHDRAIN_STALL_SECONDS', def: 180, min: 1, max: 7 * 24 * 3600 },
  { key: 'backlogQueueCount', setting: 'PUSHDRAIN_BACKLOG_QUEUE_COUNT', def: 2, min: 1, max: 10 },
  { key: 'failoverIntervalMs', setting: 'PUSHDRAIN_FAILOVER_INTERVAL_MS', def: 60_000, min: 0, max: 3_600_000 },
  { key: 'pingIntervalMs', setting: 'PUSHDRAIN_PING_INTERVAL_MS', def: 10_000, min: 100, max: 600_000 },
];

type ScaleLimit = 'minInstances' | 'maxInstances' | 'intervalSeconds' | 'upCooldownSeconds' | 'downCooldownSeconds';
type ScaleSpec = IntSpec<ScaleLimit>;
/** Any named limit: readInt reads both tables. */
type NamedLimit = IntSpec<string>;

/** The scaling agent's named limits (instance bounds fit both plans: Flex allows up to 1,000). */
export const SCALE_SPECS: readonly ScaleSpec[] = [
  { key: 'minInstances', setting: 'PUSHDRAIN_SCALE_MIN_INSTANCES', def: 0, min: 0, max: 1000 },
  { key: 'maxInstances', setting: 'PUSHDRAIN_SCALE_MAX_INSTANCES', def: 100, min: 1, max: 1000 },
  { key: 'intervalSeconds', setting: 'PUSHDRAIN_SCALE_INTERVAL_SECONDS', def: 30, min: 5, max: 3600 },
  { key: 'upCooldownSeconds', setting: 'PUSHDRAIN_SCALE_UP_COOLDOWN_SECONDS', def: 60, min: 0, max: 86_400 },
  { key: 'downCooldownSeconds', setting: 'PUSHDRAIN_SCALE_DOWN_COOLDOWN_SECONDS', def: 900, min: 60, max: 86_400 },
];

/** The connection of the secondary namespace (send availability); unset turns the feature off. */
export const SECONDARY_CONNECTION = 'ServiceBusSecondaryConnection';

function readInt(env: Env, spec: NamedLimit): number {
  const raw = env[spec.setting];
  if (raw === undefined || raw.trim() === '') return spec.def;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(spec.setting, `must be a whole number, got "${raw}"`);
  const value = Number(raw.trim());
  if (value < spec.min || value > spec.max) {
    throw new ConfigError(spec.setting, `must be between ${spec.min} and ${spec.max}, got ${value}`);
  }
  return value;
}

export function defaultTuning(): Tuning {
  return Object.fromEntries(TUNING_SPECS.map((s) => [s.key, s.def])) as unknown as Tuning;
}

/** Cross-field rules that a single range cannot express. */
function checkTuning(t: Tuning): void {
  if (t.maxIdleMs < t.minIdleMs) {
    throw new ConfigError('PUSHDRAIN_MAX_IDLE_MS', `must be at least PUSHDRAIN_MIN_IDLE_MS (${t.minIdleMs})`);
  }
  if (t.maxInflatedBytes < t.maxBodyBytes) {
    throw new ConfigError('PUSHDRAIN_MAX_INFLATED_BYTES', `must be at least PUSHDRAIN_MAX_BODY_BYTES (${t.maxBodyBytes})`);
  }
}

export function loadSettings(env: Env = process.env): Settings {
  const tuning = Object.fromEntries(TUNING_SPECS.map((s) => [s.key, readInt(env, s)])) as unknown as Tuning;
  checkTuning(tuning);
  const namePrefix = env.PUSHDRAIN_NAME_PREFIX?.trim() ?? '';
  // Queue names: 3–63 chars of [a-z0-9-]; leave room for "work-63-poison".
  if (!/^([a-z0-9][a-z0-9-]{0,38})?$/.test(namePrefix) || namePrefix.includes('--')) {
    throw new ConfigError('PUSHDRAIN_NAME_PREFIX', 'must be up to 39 chars of a-z, 0-9 and single dashes, starting with a letter or digit');
  }
  const taxRaw = env.PUSHDRAIN_TAX_RATES;
  const limits = Object.fromEntries(SCALE_SPECS.map((s) => [s.key, readInt(env, s)])) as Record<ScaleLimit, number>;
  if (limits.minInstances > limits.maxInstances) {
    throw new ConfigError('PUSHDRAIN_SCALE_MIN_INSTANCES', `must be at most PUSHDRAIN_SCALE_MAX_INSTANCES (${limits.maxInstances})`);
  }
  return {
    storage: storageConnection(env),
    serviceBus: serviceBusConnection(env),
    serviceBusSecondary: serviceBusConnection(env, SECONDARY_CONNECTION),
    namePrefix,
    taxRates: taxRaw && taxRaw.trim() !== '' ? parseTaxRates('PUSHDRAIN_TAX_RATES', taxRaw) : { ...DEFAULT_TAX_RATES },
    tuning,
    scale: { ...scaleChoices(env), ...limits },
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
  const spec = TUNING_SPECS.find((s) => s.key === 'backlogQueueCount');
  if (!spec) throw new Error('TUNING_SPECS has no backlogQueueCount');
  return readInt(env, spec);
}
