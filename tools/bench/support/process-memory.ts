/**
 * Another process's memory, read from Linux's /proc: its resident set now (VmRSS) and its
 * high-water mark (VmHWM), which a write of "5" to clear_refs sets back to the current RSS, so
 * one process's peak can be read per phase (ingest, then drain). Elsewhere: undefined.
 */
import { readFileSync, writeFileSync } from 'node:fs';

export interface ProcessMemory {
  rssMb: number;
  peakRssMb: number;
}

function field(status: string, name: string): number | undefined {
  const m = new RegExp(`^${name}:\\s+(\\d+) kB$`, 'm').exec(status);
  return m?.[1] === undefined ? undefined : Number(m[1]) / 1024;
}

export function processMemory(pid: number): ProcessMemory | undefined {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  const rssMb = field(status, 'VmRSS');
  const peakRssMb = field(status, 'VmHWM');
  return rssMb === undefined || peakRssMb === undefined ? undefined : { rssMb, peakRssMb };
}

/** Sets the process's high-water mark back to its RSS now; false where the kernel does not let us. */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}
