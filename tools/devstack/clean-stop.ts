/**
 * What a clean stop of `npm start` leaves for the next start on the same data folder. Ctrl-C lets
 * every drain finish its current messages and hand the rest back with a continuation event (kept
 * by the broker), so the batches it leaves open are healthy work, not work lost: the next start
 * must not repair them at once, nor report them. Without this note (a crash, a kill, a closed
 * terminal) start-up recovery treats every open batch as left by a dead process. With it, recovery
 * at start applies only the stall threshold, as the timer sweep does, so a hand-back whose event
 * was lost all the same is still repaired, one threshold later.
 * The note names the storage it was about (the embedded one, or a hash of the connection and the
 * name prefix): a start against other storage ignores it. It is removed when read: one start only.
 */
import { createHash } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

import { writeFileDurably } from './durable-write';

const FILE = '.pushdrain-clean-stop.json';

interface Note {
  stoppedAt: string;
  storage: string;
}

/** Which storage the open batches live in, without the connection's secret in the file. */
export function storageIdentity(env: NodeJS.ProcessEnv, embedded: boolean): string {
  const prefix = env.PUSHDRAIN_NAME_PREFIX ?? '';
  if (embedded) return `embedded:${prefix}`;
  const connection =
    env.StorageConnection ??
    env.StorageConnection__accountName ??
    env.StorageConnection__blobServiceUri ??
    env.AzureWebJobsStorage ??
    '';
  return `sha256:${createHash('sha256').update(`${connection}\n${prefix}`).digest('hex')}`;
}

export async function noteCleanStop(dataRoot: string, storage: string, now = new Date()): Promise<void> {
  const note: Note = { stoppedAt: now.toISOString(), storage };
  await writeFileDurably(join(dataRoot, FILE), JSON.stringify(note), '.tmp');
}

/** Whether the last process on this storage stopped cleanly; the note is consumed either way. */
export function takeCleanStop(dataRoot: string, storage: string): boolean {
  const file = join(dataRoot, FILE);
  let note: Partial<Note>;
  try {
    note = JSON.parse(readFileSync(file, 'utf8')) as Partial<Note>;
  } catch {
    return false; // none (a crash, or a first start), or unreadable: recover as after a crash
  } finally {
    rmSync(file, { force: true });
  }
  return note.storage === storage;
}
