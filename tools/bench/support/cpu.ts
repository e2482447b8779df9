/** CPU time, in seconds: this process (process.cpuUsage) and another one by pid (/proc/<pid>/stat). */
import { readdirSync, readFileSync } from 'node:fs';

/** Linux reports /proc/<pid>/stat in USER_HZ, which is 100 on every mainstream kernel build. */
const USER_HZ = 100;

export function processCpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

/** User + system CPU seconds of another process, from /proc/<pid>/stat; NaN if unreadable. */
export function pidCpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(rest[11]) + Number(rest[12])) / USER_HZ;
  } catch {
    return Number.NaN;
  }
}

/** Our Azurite: the child of this process running tools/devstack/azurite-child.js (other tenants may run their own). */
export function findAzuritePid(parent: number = process.pid): number | undefined {
  let entries: string[];
  try {
    entries = readdirSync('/proc').filter((e) => /^\d+$/.test(e));
  } catch {
    return undefined;
  }
  for (const e of entries) {
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== parent) continue;
      if (readFileSync(`/proc/${e}/cmdline`, 'utf8').includes('azurite-child.js')) return Number(e);
    } catch {
      // the process ended while we looked
    }
  }
  return undefined;
}
