/**
 * The broker's entity list: the same JSON that infra/ provisions, parsed and validated once.
 * A bad entry fails at start-up with a message that names the entry and the field.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** Correlation filter on application properties: every key must equal its value. `null` = all messages. */
export type CorrelationFilter = Readonly<Record<string, string | number | boolean>> | null;

/** Settings shared by anything messages are received from (queue or subscription). */
export interface ReceiveEntityConfig {
  name: string;
  /** ISO-8601 duration. @defaultValue 'PT1M' (the Service Bus default) */
  lockDuration?: string;
  /** Deliveries before a message moves to `$DeadLetterQueue`. @defaultValue 10 */
  maxDeliveryCount?: number;
  /** Expired messages go to `$DeadLetterQueue` instead of being dropped. @defaultValue false */
  deadLetteringOnMessageExpiration?: boolean;
  /** ISO-8601 duration; caps each message's own time-to-live. @defaultValue unlimited */
  defaultMessageTimeToLive?: string;
}

interface SubscriptionConfig extends ReceiveEntityConfig {
  filter: CorrelationFilter;
}

export interface TopicConfig {
  name: string;
  /** ISO-8601 duration; applies to every subscription's copy. @defaultValue unlimited */
  defaultMessageTimeToLive?: string;
  subscriptions: SubscriptionConfig[];
}

export type QueueConfig = ReceiveEntityConfig;

export interface EntitiesConfig {
  topics?: TopicConfig[];
  queues?: QueueConfig[];
}

/** Receive-side settings after defaults, in milliseconds. */
export interface StoreSettings {
  lockDurationMs: number;
  maxDeliveryCount: number;
  deadLetterOnExpiration: boolean;
  /** Infinity when no time-to-live applies. */
  ttlMs: number;
}

const ENTITIES_FILE = join('infra', 'servicebus-entities.json');
const DEFAULT_LOCK_DURATION = 'PT1M';
const DEFAULT_MAX_DELIVERY_COUNT = 10;

const DURATION = /^P(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$/;

/** ISO-8601 duration (days and time parts, as Service Bus writes them) → milliseconds. */
export function parseDuration(value: string, setting: string): number {
  const m = DURATION.exec(value);
  if (!m || value === 'P' || value.endsWith('T')) {
    throw new Error(`Invalid entity setting ${setting}: "${value}" is not an ISO-8601 duration like PT5M`);
  }
  const [d, h, min, s] = [m[1], m[2], m[3], m[4]].map((part) => Number(part ?? 0)) as [number, number, number, number];
  return Math.round(((d * 24 + h) * 60 + min) * 60_000 + s * 1000);
}

/** Walks up from `startDir` until `infra/servicebus-entities.json` exists, so any build output dir works. */
export function findEntitiesFile(startDir: string = __dirname): string {
  for (let dir = startDir; ; dir = dirname(dir)) {
    const candidate = join(dir, ENTITIES_FILE);
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) throw new Error(`Cannot find ${ENTITIES_FILE} above ${startDir}`);
  }
}

export function loadEntitiesConfig(file: string = findEntitiesFile()): EntitiesConfig {
  const parsed: unknown = JSON.parse(readFileSync(file, 'utf8'));
  return validateEntities(parsed);
}

/** Checks the shape once, so the rest of the broker can trust it. */
export function validateEntities(value: unknown): EntitiesConfig {
  if (!isRecord(value)) throw new Error('Invalid entities config: expected an object with topics and queues');
  const topics = arrayAt(value, 'topics', 'entities');
  const queues = arrayAt(value, 'queues', 'entities');
  const seen = new Set<string>();
  const claim = (name: string, where: string): void => {
    const key = name.toLowerCase();
    if (seen.has(key)) throw new Error(`Invalid entity setting ${where}: duplicate entity name "${name}"`);
    seen.add(key);
  };
  topics.forEach((t, i) => {
    const where = `topics[${i}]`;
    if (!isRecord(t)) throw new Error(`Invalid entity setting ${where}: expected an object`);
    claim(nameAt(t, where), where);
    optionalDuration(t, 'defaultMessageTimeToLive', where);
    const subNames = new Set<string>();
    arrayAt(t, 'subscriptions', where).forEach((s, j) => {
      const subWhere = `${where}.subscriptions[${j}]`;
      if (!isRecord(s)) throw new Error(`Invalid entity setting ${subWhere}: expected an object`);
      const name = nameAt(s, subWhere).toLowerCase();
      if (subNames.has(name)) throw new Error(`Invalid entity setting ${subWhere}: duplicate subscription name`);
      subNames.add(name);
      validateReceiveEntity(s, subWhere);
      validateFilter(s.filter, `${subWhere}.filter`);
    });
  });
  queues.forEach((q, i) => {
    const where = `queues[${i}]`;
    if (!isRecord(q)) throw new Error(`Invalid entity setting ${where}: expected an object`);
    claim(nameAt(q, where), where);
    validateReceiveEntity(q, where);
  });
  return value;
}

/** Applies defaults; `inheritedTtl` is the topic's cap, if any. */
export function storeSettings(entity: ReceiveEntityConfig, where: string, inheritedTtl?: string): StoreSettings {
  const ttls = [entity.defaultMessageTimeToLive, inheritedTtl]
    .filter((t): t is string => t !== undefined)
    .map((t) => parseDuration(t, `${where}.defaultMessageTimeToLive`));
  return {
    lockDurationMs: parseDuration(entity.lockDuration ?? DEFAULT_LOCK_DURATION, `${where}.lockDuration`),
    maxDeliveryCount: entity.maxDeliveryCount ?? DEFAULT_MAX_DELIVERY_COUNT,
    deadLetterOnExpiration: entity.deadLetteringOnMessageExpiration ?? false,
    ttlMs: Math.min(Infinity, ...ttls),
  };
}

function validateReceiveEntity(e: Record<string, unknown>, where: string): void {
  optionalDuration(e, 'lockDuration', where);
  optionalDuration(e, 'defaultMessageTimeToLive', where);
  const lock = e.lockDuration;
  if (typeof lock === 'string' && parseDuration(lock, `${where}.lockDuration`) < 100) {
    throw new Error(`Invalid entity setting ${where}.lockDuration: must be at least 100 ms`);
  }
  const mdc = e.maxDeliveryCount;
  if (mdc !== undefined && (typeof mdc !== 'number' || !Number.isInteger(mdc) || mdc < 1)) {
    throw new Error(`Invalid entity setting ${where}.maxDeliveryCount: must be an integer ≥ 1`);
  }
  const dl = e.deadLetteringOnMessageExpiration;
  if (dl !== undefined && typeof dl !== 'boolean') {
    throw new Error(`Invalid entity setting ${where}.deadLetteringOnMessageExpiration: must be true or false`);
  }
}

function validateFilter(filter: unknown, where: string): void {
  if (filter === null) return;
  if (!isRecord(filter))
    throw new Error(`Invalid entity setting ${where}: expected null or an object of property values`);
  for (const [key, v] of Object.entries(filter)) {
    if (!['string', 'number', 'boolean'].includes(typeof v)) {
      throw new Error(`Invalid entity setting ${where}.${key}: expected a string, number or boolean`);
    }
  }
}

function optionalDuration(e: Record<string, unknown>, key: string, where: string): void {
  const v = e[key];
  if (v === undefined) return;
  if (typeof v !== 'string') throw new Error(`Invalid entity setting ${where}.${key}: expected an ISO-8601 string`);
  parseDuration(v, `${where}.${key}`);
}

function nameAt(e: Record<string, unknown>, where: string): string {
  const name = e.name;
  if (typeof name !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name)) {
    throw new Error(`Invalid entity setting ${where}.name: expected letters, digits, ".", "_" or "-"`);
  }
  return name;
}

function arrayAt(e: Record<string, unknown>, key: string, where: string): unknown[] {
  const v = e[key];
  if (v === undefined) return [];
  if (!Array.isArray(v)) throw new Error(`Invalid entity setting ${where}.${key}: expected an array`);
  return v as unknown[];
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
