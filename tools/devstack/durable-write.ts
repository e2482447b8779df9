/**
 * Replaces a file so that a crash leaves either the old or the new content, never a torn one:
 * write a temporary file beside it, fsync it, rename it over the file, fsync the folder (the
 * rename itself is durable only then). The development broker's journal and the embedded
 * Azurite's saved metadata both rely on it.
 */
import { open, rename } from 'node:fs/promises';
import { dirname } from 'node:path';

export async function writeFileDurably(file: string, data: string | Uint8Array, tmpSuffix: string): Promise<void> {
  const tmp = `${file}${tmpSuffix}`;
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
