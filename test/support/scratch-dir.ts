/**
 * A temporary folder that lives as long as the test file's process. Removed on exit rather than
 * in an `after` hook, so that a failed or cancelled test leaves nothing behind either.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made: string[] = [];
process.once('exit', () => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
});

export function scratchDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  made.push(d);
  return d;
}
