/**
 * From journal operations to live entities and back: `replay` folds what a segment holds into
 * the last state of every message, `restore` loads that into the registry (a lock held at the
 * crash is released as an expired lock is: counted, and dead-lettered past maxDeliveryCount),
 * and `snapshot` writes the registry's state as operations for a compaction.
 */
import { decodeMessage } from './amqp-message';
import type { EntityRegistry } from './entities';
import type { JournalOp, MessageRecord, MessageState } from './journal-codec';

interface Entry {
  record: MessageRecord;
  state: MessageState;
}

export interface ReplayedState {
  /** By store path (lower case): message entries by sequence number. */
  stores: Map<string, Map<number, Entry>>;
  /** By target path (lower case): scheduled messages by sequence number. */
  scheduled: Map<string, Map<number, { at: number; payload: Buffer }>>;
  /** Highest sequence number seen per owner (target, or dead-letter queue), lower case. */
  sequences: Map<string, number>;
}

export function replay(ops: readonly JournalOp[]): ReplayedState {
  const state: ReplayedState = { stores: new Map(), scheduled: new Map(), sequences: new Map() };
  const seen = (owner: string, seq: number): void => {
    const key = owner.toLowerCase();
    state.sequences.set(key, Math.max(state.sequences.get(key) ?? 0, seq));
  };
  const store = (path: string): Map<number, Entry> =>
    getOrAdd(state.stores, path.toLowerCase(), () => new Map<number, Entry>());
  for (const op of ops) {
    switch (op.kind) {
      case 'put':
        store(op.store).set(op.message.sequenceNumber, { record: op.message, state: op.state });
        seen(op.store, op.message.sequenceNumber);
        break;
      case 'lock': {
        const entry = store(op.store).get(op.seq);
        if (entry) entry.state = `locked-${op.origin}`;
        break;
      }
      case 'update': {
        const entry = store(op.store).get(op.seq);
        if (!entry) break;
        entry.state = op.state;
        entry.record = {
          ...entry.record,
          deliveryCount: op.deliveryCount,
          payload: op.payload ?? entry.record.payload,
        };
        break;
      }
      case 'remove':
        store(op.store).delete(op.seq);
        break;
      case 'schedule':
        getOrAdd(state.scheduled, op.target.toLowerCase(), () => new Map()).set(op.seq, {
          at: op.at,
          payload: op.payload,
        });
        seen(op.target, op.seq);
        break;
      case 'unschedule':
        state.scheduled.get(op.target.toLowerCase())?.delete(op.seq);
        break;
      case 'sequence':
        seen(op.owner, op.value);
        break;
    }
  }
  return state;
}

export interface RestoreSummary {
  messages: number;
  scheduled: number;
  /** Locks held when the broker stopped, now released and counted. */
  releasedLocks: number;
  /** Entries of entities that are no longer configured. */
  dropped: number;
}

export function restore(registry: EntityRegistry, state: ReplayedState): RestoreSummary {
  const summary: RestoreSummary = { messages: 0, scheduled: 0, releasedLocks: 0, dropped: 0 };
  const known = new Set<string>();
  // Numbering first: a lock released past maxDeliveryCount takes the next dead-letter number.
  for (const target of registry.allTargets()) {
    const key = target.path.toLowerCase();
    known.add(key);
    const inStores = target.stores.map((s) => state.sequences.get(s.path.toLowerCase()) ?? 0);
    target.restoreSequence(Math.max(state.sequences.get(key) ?? 0, ...inStores));
    for (const [seq, s] of state.scheduled.get(key) ?? []) {
      target.restoreScheduled(seq, decodeMessage(s.payload), s.at, s.payload);
      summary.scheduled++;
    }
  }
  const stores = registry.allStores();
  for (const store of stores)
    if (!store.deadLetterQueue) store.restoreSequence(state.sequences.get(store.path.toLowerCase()) ?? 0);
  // Dead-letter queues before their sources, for the same reason.
  for (const store of [...stores].sort(
    (a, b) => Number(a.deadLetterQueue !== undefined) - Number(b.deadLetterQueue !== undefined),
  )) {
    const key = store.path.toLowerCase();
    known.add(key);
    const entries = [...(state.stores.get(key)?.values() ?? [])].sort(
      (a, b) => a.record.sequenceNumber - b.record.sequenceNumber,
    );
    for (const { record, state: where } of entries) {
      const { payload, ...fields } = record;
      store.restore({ ...fields, payload: decodeMessage(payload), encoded: payload }, where);
      summary.messages++;
      if (where.startsWith('locked')) summary.releasedLocks++;
    }
  }
  for (const [key, entries] of state.stores) if (!known.has(key)) summary.dropped += entries.size;
  for (const [key, entries] of state.scheduled) if (!known.has(key)) summary.dropped += entries.size;
  return summary;
}

export function snapshot(registry: EntityRegistry): JournalOp[] {
  return [...registry.allTargets().flatMap((t) => t.snapshot()), ...registry.allStores().flatMap((s) => s.snapshot())];
}

function getOrAdd<K, V>(map: Map<K, V>, key: K, make: () => V): V {
  let v = map.get(key);
  if (v === undefined) {
    v = make();
    map.set(key, v);
  }
  return v;
}
