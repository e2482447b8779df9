/**
 * The Service Bus receive errors of one connection, logged as states rather than as a stream:
 * while a namespace is down the SDK reports every reconnect attempt of every receiver (dozens
 * a second), which buries everything else. So: the first error is logged as it is, then one
 * summary per interval while errors go on, then one line once an interval passes without an
 * error (one receiver getting a message says nothing of the others). Healthy, it holds no timer.
 */

export interface ReceiveErrorLogOptions {
  /** The connection's setting name: it starts every line. */
  connection: string;
  warn(message: string): void;
  info(message: string): void;
  now(): number;
  /** @defaultValue 30_000 */
  summaryEveryMs?: number;
  /** Calls `tick` every `ms` until the returned stop is called. @defaultValue an unref'd setInterval */
  every?: (ms: number, tick: () => void) => () => void;
}

interface Episode {
  since: number;
  total: number;
  /** Errors since the last summary. */
  recent: number;
  entities: Set<string>;
  latest: string;
  stop: () => void;
}

const intervalTimer = (ms: number, tick: () => void): (() => void) => {
  const timer = setInterval(tick, ms);
  timer.unref(); // a summary must not keep a stopping process alive
  return () => clearInterval(timer);
};

export class ReceiveErrorLog {
  private episode: Episode | undefined;
  private readonly summaryEveryMs: number;

  constructor(private readonly o: ReceiveErrorLogOptions) {
    this.summaryEveryMs = o.summaryEveryMs ?? 30_000;
  }

  error(entity: string, message: string): void {
    const e = this.episode;
    if (e) {
      e.total++;
      e.recent++;
      e.entities.add(entity);
      e.latest = message;
      return;
    }
    const seconds = Math.round(this.summaryEveryMs / 1000);
    this.o.warn(
      `${this.o.connection}: Service Bus receive error on ${entity}: ${message} (while errors go on, a summary every ${seconds} s)`,
    );
    const stop = (this.o.every ?? intervalTimer)(this.summaryEveryMs, () => this.summarise());
    this.episode = { since: this.o.now(), total: 1, recent: 0, entities: new Set(), latest: message, stop };
  }

  close(): void {
    this.episode?.stop();
    this.episode = undefined;
  }

  private summarise(): void {
    const e = this.episode;
    if (!e) return;
    const seconds = Math.round(this.summaryEveryMs / 1000);
    if (e.recent === 0) return this.end(seconds);
    this.o.warn(
      `${this.o.connection}: Service Bus still failing to receive: ${e.recent} errors in the last ${seconds} s on ${[...e.entities].join(', ')}; latest: ${e.latest}`,
    );
    e.recent = 0;
    e.entities.clear();
  }

  private end(quietSeconds: number): void {
    const e = this.episode!;
    e.stop();
    this.episode = undefined;
    this.o.info(
      `${this.o.connection}: Service Bus receives again (no error for ${quietSeconds} s); ${e.total} receive errors in ${Math.round((this.o.now() - e.since) / 1000)} s`,
    );
  }
}
