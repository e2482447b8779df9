/**
 * Counts messages on the Service Bus entities by peeking over AMQP, which needs only the
 * Listen right the app already has (Data Receiver). The runtime-properties API
 * (ServiceBusAdministrationClient) needs the Manage claim and speaks HTTPS/ATOM, which neither
 * the app identity nor the development broker has. Peeking takes no lock and changes nothing;
 * each peek of up to `limit` messages is one Service Bus operation.
 */
import type { ServiceBusReceivedMessage, ServiceBusReceiver } from '@azure/service-bus';
import Long from 'long';

import { ensureError } from '../errors';
import { SUBSCRIPTIONS, TOPIC, WATCHDOG_QUEUE } from '../names';
import type { BusEntityCounts, BusInspection, BusInspector, DeadLetter } from './inspection';
import type { BusClient } from './lazy-service-bus-client';

export interface BusEntity {
  /** A queue, or a topic with one of its subscriptions. */
  queue?: string;
  topic?: string;
  subscription?: string;
}

/** The app's own entities: the topic's subscriptions and the watchdog queue. */
const APP_ENTITIES: readonly BusEntity[] = [
  ...Object.values(SUBSCRIPTIONS).map((s) => ({ topic: TOPIC, subscription: s.name })),
  { queue: WATCHDOG_QUEUE },
];

export interface InspectorOptions {
  /** Messages counted per entity and sub-queue at most. @defaultValue 100 */
  limit?: number;
  /** Per entity; a status page must not hang on a slow namespace. @defaultValue 5000 */
  timeoutMs?: number;
}

const SHOWN_DEAD_LETTERS = 10;

function pathOf(e: BusEntity): string {
  return e.queue ?? `${e.topic ?? ''}/Subscriptions/${e.subscription ?? ''}`;
}

function deadLetter(m: ServiceBusReceivedMessage): DeadLetter {
  const body = typeof m.body === 'string' ? m.body : (JSON.stringify(m.body) ?? '');
  return {
    reason: m.deadLetterReason ?? '(no reason given)',
    ...(m.deadLetterErrorDescription ? { description: m.deadLetterErrorDescription } : {}),
    enqueuedAt: (m.enqueuedTimeUtc ?? new Date(0)).toISOString(),
    body: body.slice(0, 200),
  };
}

export class ServiceBusInspector implements BusInspector {
  private readonly limit: number;
  private readonly timeoutMs: number;

  constructor(
    private readonly client: BusClient,
    /** Close the client with the inspector (false when the publisher shares it and closes it). */
    private readonly ownsClient: boolean,
    private readonly entities: readonly BusEntity[] = APP_ENTITIES,
    options: InspectorOptions = {},
  ) {
    this.limit = options.limit ?? 100;
    this.timeoutMs = options.timeoutMs ?? 5_000;
  }

  async inspect(): Promise<BusInspection> {
    const entities = await Promise.all(this.entities.map((e) => this.one(e)));
    return { available: true, method: 'peek', limit: this.limit, entities };
  }

  async close(): Promise<void> {
    if (this.ownsClient) await this.client.close();
  }

  private async one(e: BusEntity): Promise<BusEntityCounts> {
    const entity = pathOf(e);
    try {
      const [main, dead] = await Promise.all([this.peekAll(e, false), this.peekAll(e, true)]);
      return {
        entity,
        active: main.filter((m) => m.state !== 'scheduled').length,
        scheduled: main.filter((m) => m.state === 'scheduled').length,
        deadLetters: dead.length,
        truncated: main.length >= this.limit,
        deadLettersTruncated: dead.length >= this.limit,
        deadLettered: dead.slice(-SHOWN_DEAD_LETTERS).reverse().map(deadLetter),
      };
    } catch (err) {
      return {
        entity,
        active: 0,
        scheduled: 0,
        deadLetters: 0,
        truncated: false,
        deadLettersTruncated: false,
        deadLettered: [],
        error: ensureError(err).message.slice(0, 300),
      };
    }
  }

  /**
   * Peeks from the first sequence number on. The SDK keeps its "last peeked" position per
   * entity and client, not per receiver, so every call names where to start. No receive link
   * is opened, so nothing is locked.
   */
  private async peekAll(e: BusEntity, deadLetters: boolean): Promise<ServiceBusReceivedMessage[]> {
    const options = deadLetters ? { subQueueType: 'deadLetter' as const } : {};
    const receiver: ServiceBusReceiver = e.queue
      ? this.client.createReceiver(e.queue, options)
      : this.client.createReceiver(e.topic ?? '', e.subscription ?? '', options);
    try {
      return await peekFromStart(receiver, this.limit, this.timeoutMs);
    } finally {
      await receiver.close();
    }
  }
}

/**
 * Up to `limit` messages, peeked from the first sequence number (the SDK keeps its peek position
 * per entity and client, so every call names where to start), within `timeoutMs` in all. Peeking
 * takes no lock and changes nothing.
 */
export async function peekFromStart(
  receiver: ServiceBusReceiver,
  limit: number,
  timeoutMs: number,
): Promise<ServiceBusReceivedMessage[]> {
  const out: ServiceBusReceivedMessage[] = [];
  const signal = AbortSignal.timeout(timeoutMs);
  // Bounded: each round adds at least one message or stops.
  let from = Long.ZERO;
  for (let round = 0; round < limit && out.length < limit; round++) {
    const got = await receiver.peekMessages(limit - out.length, { abortSignal: signal, fromSequenceNumber: from });
    const last = got.at(-1)?.sequenceNumber;
    if (!last) break;
    out.push(...got);
    from = last.add(1);
  }
  return out;
}
