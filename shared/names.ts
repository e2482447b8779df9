/**
 * Every queue, container, topic and subscription name the app uses, in one place.
 * infra/ provisions exactly these (a test reads both); a prefix lets tests isolate themselves.
 */
import { createHash } from 'node:crypto';

export const TOPIC = 'work-detected';

/** Service Bus topic of the batches' completed/failed CloudEvents; consumers bring their own subscriptions. */
export const BATCH_EVENTS_TOPIC = 'batch-events';

/** Time to live of a batch event on `batch-events`: the topic's default (infra/servicebus-entities.json). */
export const BATCH_EVENT_TTL_MS = 14 * 24 * 3600_000;

/** Service Bus queue of scheduled per-batch watchdog checks (zero cost until one fires). */
export const WATCHDOG_QUEUE = 'batch-watchdog';

/** Time to live of a WorkDetected event: the `work-detected` topic's default (infra/servicebus-entities.json). */
export const EVENT_TTL_MS = 3600_000;

/** Time to live of a watchdog check: the `batch-watchdog` queue's default (infra/servicebus-entities.json). */
export const WATCHDOG_TTL_MS = 7 * 24 * 3600_000;

/** Backlog queues `backlog-0…backlog-{n-1}` of the secondary namespace (send availability). */
export function backlogQueues(count: number): string[] {
  return Array.from({ length: count }, (_, i) => `backlog-${i}`);
}

/** The two stages the drainer serves: the input queues are map, the results queue is reduce. */
export type Stage = 'map' | 'reduce';

/**
 * WorkDetected's `role` property, which the subscriptions filter on. It is the wire's word
 * (deployed filters and the event contract use it); the code says Stage, and ROLE_OF is the
 * one place where the two meet.
 */
export type Role = 'input' | 'output';

export const ROLE_OF: Readonly<Record<Stage, Role>> = { map: 'input', reduce: 'output' };

export const SUBSCRIPTIONS = {
  drain: { name: 'drain', role: ROLE_OF.map },
  aggregate: { name: 'aggregate', role: ROLE_OF.reduce },
  scale: { name: 'scale', role: undefined },
} as const;

/** The function names the scaling agent addresses (Flex always-ready entries are `function:<name>`). */
export const FUNCTION_NAMES = { drain: 'drain', scaleAgent: 'scaleAgent' } as const;

/** Application property `role` of the scaling agent's own scheduled checks: only `scale` receives them. */
export const SCALE_CHECK_ROLE = 'scale';

export const CONTAINERS = [
  'work',
  'results',
  'batches',
  'reports',
  'incoming',
  'archive',
  'rejected',
  'leases',
] as const;
export type ContainerKey = (typeof CONTAINERS)[number];

/** Resolved names for one deployment (or one test). */
export interface EntityNames {
  container: (key: ContainerKey) => string;
  inputQueue: (partition: number) => string;
  inputQueues: () => string[];
  /** The input queue of a batch's chunk (see partitionOf). */
  inputQueueOf: (batchId: string, chunk: number) => string;
  resultsQueue: string;
  poisonQueue: (queue: string) => string;
  /** Batch-event deliveries that exhausted their retry schedule, each with its last status and error. */
  deliveriesPoisonQueue: string;
  /** Every queue the app reads or writes, poison twins included. */
  allQueues: () => string[];
  /** The stage of a queue we own, or undefined for a foreign name (never drain what we don't own). */
  stageOf: (queue: string) => Stage | undefined;
}

/** Names are `${prefix}${base}`; the prefix is validated by settings (lowercase, digits, dashes). */
export function entityNames(prefix: string, partitions: number): EntityNames {
  const inputQueue = (p: number): string => `${prefix}work-${p}`;
  const inputs = Array.from({ length: partitions }, (_, p) => inputQueue(p));
  const resultsQueue = `${prefix}results`;
  const poisonQueue = (q: string): string => `${q}-poison`;
  return {
    container: (key) => `${prefix}${key}`,
    inputQueue,
    inputQueues: () => [...inputs],
    inputQueueOf: (batchId, chunk) => inputQueue(partitionOf(batchId, chunk, partitions)),
    resultsQueue,
    poisonQueue,
    deliveriesPoisonQueue: `${prefix}deliveries-poison`,
    allQueues: () => [...[...inputs, resultsQueue].flatMap((q) => [q, poisonQueue(q)]), `${prefix}deliveries-poison`],
    stageOf: (queue) => (queue === resultsQueue ? 'reduce' : inputs.includes(queue) ? 'map' : undefined),
  };
}

/**
 * Chunk i of a batch goes to partition (offset + i) mod P, with the offset from the batch id:
 * a batch of at least P chunks uses every partition, and small batches don't all land on 0.
 */
export function partitionOf(batchId: string, chunk: number, partitions: number): number {
  const offset = createHash('sha256').update(batchId).digest().readUInt32BE(0) % partitions;
  return (offset + chunk) % partitions;
}
