/**
 * Whether `pid` is a running process and, where /proc tells, the one we mean (`matches` its
 * command line): after a reboot or a long time a pid may belong to anything else.
 */
import { existsSync, readFileSync } from 'node:fs';

export function processRunning(pid: number, matches: (cmdline: string) => boolean): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  if (!existsSync('/proc/self/cmdline')) return true;
  try {
    return matches(readFileSync(`/proc/${pid}/cmdline`, 'utf8'));
  } catch {
    return false;
  }
}
