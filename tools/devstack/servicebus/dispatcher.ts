/**
 * Hands available messages to the receivers of one entity, round-robin over those with credit,
 * so competing consumers share the work and no message goes to two of them.
 */
import type { MessageStore } from './message-store';
import type { StoredMessage } from './stored-message';

/** A receiver link as the dispatcher sees it. */
export interface MessageSink {
  /** Deliveries this receiver can take now. */
  readonly credit: number;
  deliver(message: StoredMessage): void;
}

export class Dispatcher {
  private readonly sinks: MessageSink[] = [];
  private next = 0;
  private pumping = false;
  private again = false;

  constructor(readonly store: MessageStore) {
    store.onAvailable = () => this.pump();
  }

  add(sink: MessageSink): void {
    this.sinks.push(sink);
    this.pump();
  }

  remove(sink: MessageSink): void {
    const i = this.sinks.indexOf(sink);
    if (i >= 0) this.sinks.splice(i, 1);
  }

  get receivers(): number {
    return this.sinks.length;
  }

  /** Delivers until messages or credit run out. Re-entrant calls (a delivery that frees a message) loop here. */
  pump(): void {
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    try {
      do {
        this.again = false;
        this.deliverAll();
      } while (this.again);
    } finally {
      this.pumping = false;
    }
  }

  private deliverAll(): void {
    for (let sink = this.nextWithCredit(); sink; sink = this.nextWithCredit()) {
      const message = this.store.take();
      if (!message) return;
      sink.deliver(message);
    }
  }

  private nextWithCredit(): MessageSink | undefined {
    for (let i = 0; i < this.sinks.length; i++) {
      const idx = (this.next + i) % this.sinks.length;
      const sink = this.sinks[idx]!;
      if (sink.credit > 0) {
        this.next = (idx + 1) % this.sinks.length;
        return sink;
      }
    }
    return undefined;
  }
}
