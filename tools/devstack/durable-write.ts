/**
 * Replaces a file so that a crash leaves either the old or the new content, never a torn one:
 * write a temporary file beside it, fsync it, rename it over the file, fsync the folder (the
 * rename itself is durable only then). The development broker's journal and the embedded
 * Azurite's saved metadata both rely on it.
 * The temporary file is the writer's own (process id and a counter before the suffix): two local
 * instances of a fleet share one data folder and note their clean stop at the same moment, and a
 * shared name let one rename the other's file away (ENOENT, a failed stop).
 */
import { open, rename } from 'node:fs/promises';
import { dirname } from 'node:path';

let writes = 0;

/** `tmpSuffix` ends the temporary file's name, so a cleanup that matches it finds an unfinished write. */
export async function writeFileDurably(file: string, data: string | Uint8Array, tmpSuffix: string): Promise<void> {
  const tmp = `${file}.${process.pid}-${++writes}${tmpSuffix}`;
  const handle = await open(tmp, 'w');
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(tmp, file);
  const folder = await open(dirname(file), 'r');
  try {
    await folder.sync();
  } finally {
    await folder.close();
  }
}
