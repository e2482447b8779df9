/**
 * The entities the broker serves, built from the config, and the mapping from link addresses
 * (`queue`, `topic`, `topic/Subscriptions/sub`, `…/$DeadLetterQueue`) to them.
 * Service Bus paths are case-insensitive, so lookups are too.
 */
import { type EntitiesConfig, type StoreSettings, storeSettings } from './config';
import { Dispatcher } from './dispatcher';
import { MessageStore, type StoreDeps } from './message-store';
import { type Route, SendTarget } from './send-target';

const DEAD_LETTER_SUFFIX = '/$DeadLetterQueue';
const MANAGEMENT_SUFFIX = '/$management';

/** Something messages are received from, with the dispatcher that feeds its receivers. */
export interface ReceiveEntity {
  store: MessageStore;
  dispatcher: Dispatcher;
}

export class EntityRegistry {
  private readonly targets = new Map<string, SendTarget>();
  private readonly receivables = new Map<string, ReceiveEntity>();

  constructor(config: EntitiesConfig, deps: StoreDeps) {
    for (const [i, q] of (config.queues ?? []).entries()) {
      const store = this.addReceivable(q.name, storeSettings(q, `queues[${i}]`), deps);
      this.addTarget(q.name, [{ store, filter: null }], deps);
    }
    for (const [i, t] of (config.topics ?? []).entries()) {
      const routes = t.subscriptions.map((s, j): Route => {
        const settings = storeSettings(s, `topics[${i}].subscriptions[${j}]`, t.defaultMessageTimeToLive);
        return { store: this.addReceivable(`${t.name}/Subscriptions/${s.name}`, settings, deps), filter: s.filter };
      });
      this.addTarget(t.name, routes, deps);
    }
  }

  sendTarget(address: string): SendTarget | undefined {
    return this.targets.get(normalizePath(address));
  }

  receiveEntity(address: string): ReceiveEntity | undefined {
    return this.receivables.get(normalizePath(address));
  }

  /** Every receivable path (original spelling), for logs and the CLI banner. */
  receivePaths(): string[] {
    return [...this.receivables.values()].map((r) => r.store.path);
  }

  allTargets(): SendTarget[] {
    return [...this.targets.values()];
  }

  /** Queues, subscriptions and their dead-letter queues. */
  allStores(): MessageStore[] {
    return [...this.receivables.values()].map((r) => r.store);
  }

  private addReceivable(path: string, settings: StoreSettings, deps: StoreDeps): MessageStore {
    const store = new MessageStore(path, settings, deps);
    const dlqSettings: StoreSettings = {
      ...settings,
      maxDeliveryCount: Infinity,
      deadLetterOnExpiration: false,
      ttlMs: Infinity,
    };
    const dlq = new MessageStore(`${path}${DEAD_LETTER_SUFFIX}`, dlqSettings, deps);
    store.deadLetterQueue = dlq;
    for (const s of [store, dlq])
      this.receivables.set(normalizePath(s.path), { store: s, dispatcher: new Dispatcher(s) });
    return store;
  }

  private addTarget(path: string, routes: Route[], deps: StoreDeps): void {
    this.targets.set(normalizePath(path), new SendTarget(path, routes, deps));
  }
}

/** `sb://host/Queue/` → `queue`: scheme and host dropped, slashes trimmed, lower case. */
export function normalizePath(address: string): string {
  return address
    .replace(/^[a-z]+:\/\/[^/]*/i, '')
    .replace(/^\/+|\/+$/g, '')
    .toLowerCase();
}

/** The entity a `…/$management` address belongs to, or undefined for any other address. */
export function managedEntity(address: string): string | undefined {
  const lower = address.toLowerCase();
  return lower.endsWith(MANAGEMENT_SUFFIX.toLowerCase()) ? address.slice(0, -MANAGEMENT_SUFFIX.length) : undefined;
}

/** True when `path` is `scope` or lies under it (a topic's subscriptions, an entity's DLQ). */
export function isWithin(path: string, scope: string): boolean {
  const p = normalizePath(path);
  const s = normalizePath(scope);
  return p === s || p.startsWith(`${s}/`);
}
