/**
 * In-memory stand-ins for the failover logic's fast unit tests: a clock whose time moves only
 * when the test advances it, and a MessageChannel that records sends and fails on demand.
 * The over-the-wire tests (failover-*.test.ts) use the real SDK against two brokers instead.
 */
import type { MessageChannel } from '../../shared/bus/message-channel';
import type { OutgoingMessage } from '../../shared/bus/outgoing-message';
import type { Clock } from '../../shared/ports';

/** Lets pending promise callbacks and I/O callbacks run. */
export const flush = (): Promise<void> => new Promise((r) => setImmediate(r));

export class ManualClock implements Clock {
  t = Date.UTC(2025, 0, 1);
  readonly slept: number[] = [];
  private sleepers: { at: number; resolve: () => void }[] = [];

  constructor(private readonly randoms: number[] = [0.5]) {}

  now(): number {
    return this.t;
  }

  sleep(ms: number): Promise<void> {
    this.slept.push(ms);
    return new Promise((resolve) => this.sleepers.push({ at: this.t + ms, resolve }));
  }

  random(): number {
    const r = this.randoms.shift() ?? 0.5;
    this.randoms.push(r);
    return r;
  }

  /** Moves time forward, waking each sleeper at its due time, in order (bounded in steps). */
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    for (let step = 0; step < 10_000; step++) {
      await flush();
      const due = this.sleepers.filter((s) => s.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.sleepers = this.sleepers.filter((s) => s !== due);
      this.t = due.at;
      due.resolve();
    }
    this.t = end;
    await flush();
  }

  get sleeping(): number {
    return this.sleepers.length;
  }
}

/** An error shaped like the SDK's ServiceBusError. */
export function sbError(code: string, message = `injected ${code}`): Error {
  return Object.assign(new Error(message), { name: 'ServiceBusError', code });
}

/** The SDK's shape once its own retries are spent: every attempt's error. */
export function spent(...errors: Error[]): AggregateError {
  return new AggregateError(errors, '');
}

export interface Sent {
  entity: string;
  messages: readonly OutgoingMessage[];
  at: Date | undefined;
}

export class FakeChannel implements MessageChannel {
  readonly sent: Sent[] = [];
  readonly pings: string[] = [];
  /** Entity (or '*') → the error its sends fail with. */
  readonly failing = new Map<string, () => Error>();
  pingError: (() => Error) | undefined;
  closed = false;

  send(entity: string, messages: readonly OutgoingMessage[], at?: Date): Promise<void> {
    const fail = this.failing.get(entity) ?? this.failing.get('*');
    if (fail) return Promise.reject(fail());
    this.sent.push({ entity, messages, at });
    return Promise.resolve();
  }

  ping(entity: string): Promise<void> {
    this.pings.push(entity);
    return this.pingError ? Promise.reject(this.pingError()) : Promise.resolve();
  }

  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }

  to(entity: string): Sent[] {
    return this.sent.filter((s) => s.entity === entity);
  }
}
