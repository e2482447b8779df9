/**
 * The seams between the pipeline steps and the outside world. Steps receive only the ports
 * they use, through their constructors; the adapters behind them (shared/storage,
 * shared/queue, shared/notify) are the only code that touches an Azure SDK client, and
 * shared/create-app.ts is the only place that picks them.
 */
import type { BlobRef } from './layout';
import type { ContainerKey } from './names';

export interface BlobRead {
  body: Buffer;
  etag: string;
}

type WriteCondition = { ifNoneMatch: '*' } | { ifMatch: string };

export interface WriteOptions {
  contentType: string;
  contentEncoding?: string;
  /** With a condition, a failed condition returns undefined instead of throwing. */
  condition?: WriteCondition;
  metadata?: Record<string, string>;
}

export interface BlobInfo {
  size: number;
  metadata: Record<string, string>;
}

export interface ListedBlob {
  name: string;
  etag: string;
  /** Content length in bytes (the listing carries it: no extra request). */
  size: number;
  /** Present when the listing asked for metadata. */
  metadata?: Record<string, string>;
}

export interface ListOptions {
  /** Include each blob's metadata (same request: a listing page costs one transaction either way). */
  metadata?: boolean;
}

/** Blob Storage as the steps see it: whole-blob reads and writes, one request each where possible. */
export interface BlobStore {
  /** The bytes and ETag, or undefined when the blob does not exist. */
  read(ref: BlobRef): Promise<BlobRead | undefined>;
  /**
   * Uploads in one request and returns the new ETag. With a condition, undefined means the
   * condition failed (someone else wrote first): the caller decides what that means.
   */
  write(ref: BlobRef, body: Buffer, options: WriteOptions): Promise<string | undefined>;
  exists(ref: BlobRef): Promise<boolean>;
  /** Size and metadata, or undefined when the blob does not exist. */
  info(ref: BlobRef): Promise<BlobInfo | undefined>;
  /** Deletes if present. */
  remove(ref: BlobRef): Promise<void>;
  /** Pages of up to 5,000 names, fetched as the caller iterates: stop early to stop paying. */
  list(container: ContainerKey, prefix?: string, options?: ListOptions): AsyncIterable<ListedBlob>;
  /** Streams a (possibly large) blob without holding it in memory. */
  stream(ref: BlobRef): AsyncIterable<Buffer>;
  /** Server-side copy within the account; resolves when the copy is complete. */
  copy(from: BlobRef, to: BlobRef): Promise<void>;
}

/** Storage queues as the steps see them. Messages are small JSON pointers (claim checks). */
export interface QueueStore {
  /** The drainer's view of one queue, with its `{queue}-poison` twin. */
  queue(name: string): DrainQueue;
  /** Sends a JSON message that never expires (a backlog must not silently vanish). */
  send(queue: string, body: unknown): Promise<void>;
  /** Approximate count, in-flight messages included. */
  depth(queue: string): Promise<number>;
  /** Up to `max` (at most 32) visible messages from the front, oldest first, without taking them (one request). */
  peek(queue: string, max: number): Promise<PeekedMessage[]>;
}

export interface PeekedMessage {
  id: string;
  /** When the message was enqueued, epoch ms. */
  insertedOn: number;
  dequeueCount: number;
  text: string;
}

export interface Clock {
  now(): number;
  sleep(ms: number): Promise<void>;
  /** U(0,1). */
  random(): number;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
  random: () => Math.random(),
};

export interface Logger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export const consoleLogger: Logger = {
  info: (m) => console.log(m),
  warn: (m) => console.warn(m),
  error: (m) => console.error(m),
};

// The drainer's seams: a queue, a processor, and the slots that bound concurrent drains.

export interface QueueMessage {
  id: string;
  popReceipt: string;
  /** 1 on first delivery. */
  dequeueCount: number;
  text: string;
}

/** Azure's cap on one receive. */
export const MAX_RECEIVE = 32;

export interface DrainQueue {
  readonly name: string;
  receive(max: number, visibilityTimeoutSeconds: number): Promise<QueueMessage[]>;
  /** Throws MessageTakenError when another delivery has the message now (a duplicate, not a failure). */
  delete(message: QueueMessage): Promise<void>;
  /**
   * Keeps a message in work invisible for `visibilityTimeoutSeconds` more, from now (one
   * request), and stores the new pop receipt on `message`. Throws MessageTakenError as delete does.
   */
  extend?(message: QueueMessage, visibilityTimeoutSeconds: number): Promise<void>;
  /** Approximate count, invisible (in-flight) messages included. */
  depth(): Promise<number>;
  /** Whether at least one message is visible right now. */
  hasVisible(): Promise<boolean>;
  /** Moves a message to the `{queue}-poison` twin with the reason, then deletes it. */
  poison(message: QueueMessage, reason: string): Promise<void>;
  /**
   * Gives a message this instance cannot read (a newer format) back for another instance: visible
   * again in `delaySeconds`, its handback count (`hb`, handbacks.ts) one higher, in one request.
   * Throws MessageTakenError as delete does.
   */
  handBack?(message: QueueMessage, delaySeconds: number): Promise<void>;
}

/** What a `{queue}-poison` message holds: the original message, and why and when it was moved. */
export interface PoisonRecord {
  queue: string;
  messageId: string;
  dequeueCount: number;
  reason: string;
  at: string;
  text: string;
}

export interface MessageProcessor {
  /** Throw to leave the message for redelivery; throw PermanentError to poison it now. */
  process(message: QueueMessage): Promise<void>;
  /** After a received batch is processed and before it is deleted (e.g. publish what it produced). */
  afterBatch?(): Promise<void>;
  /** A message was moved to poison: record it against its batch. */
  onPoison?(message: QueueMessage, reason: string): Promise<void>;
}

export interface HeldSlot {
  readonly id: string;
  /** Which of the queue's slots (0-based); the holder of slot 0 leads the queue's fan-out. */
  readonly index: number;
  /** Its lease was taken over (renewal refused): the drain must stop taking new messages. */
  readonly lost?: boolean;
  release(): Promise<void>;
}

/** The "processing already running" record: at most S concurrent drains per queue. */
export interface DrainSlots {
  /** A free slot for the queue, or undefined when all are held. */
  acquire(queue: string): Promise<HeldSlot | undefined>;
  /** How long a crashed holder can keep a slot: after this, a retry finds it free. */
  readonly holdLimitMs: number;
}
