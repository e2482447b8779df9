/**
 * Opens the broker's data folder: recover the newest segment, restore the entities from it,
 * write the recovered state as a fresh segment (so released locks and a cut tail are settled
 * on disk before anyone connects), and switch the registry to the durable journal.
 */
import type { EntityRegistry } from './entities';
import { DurableJournal, type JournalSwitch } from './journal';
import { recoverSegments, writeSegmentSync } from './journal-segments';
import { replay, restore, snapshot } from './recovery';

export interface PersistenceOptions {
  dir: string;
  compactAtBytes: number;
  notice: (line: string) => void;
  onFatal: (err: Error) => void;
}

export const DEFAULT_COMPACT_AT_BYTES = 4 * 1024 * 1024;

export function openPersistence(
  registry: EntityRegistry,
  journal: JournalSwitch,
  options: PersistenceOptions,
): DurableJournal {
  const { segments, ops } = recoverSegments(options.dir, options.notice);
  try {
    const summary = restore(registry, replay(ops));
    const generation = segments.generation + 1;
    segments.bytes = writeSegmentSync(segments, generation, snapshot(registry));
    segments.retire(generation);
    const durable = new DurableJournal({
      segments,
      snapshot: () => snapshot(registry),
      compactAtBytes: options.compactAtBytes,
      onFatal: options.onFatal,
    });
    journal.use(durable);
    const parts = [`${summary.messages} messages`, `${summary.scheduled} scheduled`];
    if (summary.releasedLocks > 0)
      parts.push(`${summary.releasedLocks} locks held at the last stop released and counted`);
    if (summary.dropped > 0) parts.push(`${summary.dropped} dropped (their entities are no longer configured)`);
    options.notice(`servicebus: data in ${options.dir}: restored ${parts.join(', ')}`);
    return durable;
  } catch (e) {
    segments.unlock();
    throw e;
  }
}
