/**
 * The journal's folder: `journal-<generation>.log` segments (the newest is live; each begins
 * with a snapshot of the state), a `LOCK` file naming the broker process that owns the folder,
 * and recovery at start-up. A segment is written whole to a `.tmp` file, fsynced and renamed,
 * so a compaction that a crash interrupts leaves the previous segment in charge.
 */
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';

import { writeFileDurably } from '../durable-write';
import { processRunning } from '../process-alive';
import { encodeOps, frameRecord, type JournalOp, scanSegment, SEGMENT_MAGIC } from './journal-codec';

const SEGMENT = /^journal-(\d{6,})\.log$/;
const LOCK_FILE = 'LOCK';

/** Folders opened by this process (a second broker on one folder would interleave two journals). */
const openHere = new Set<string>();

export class Segments {
  constructor(
    readonly dir: string,
    public generation: number,
    /** Size of the live segment. */
    public bytes: number,
  ) {}

  path(generation: number): string {
    return join(this.dir, `journal-${String(generation).padStart(6, '0')}.log`);
  }

  /** Deletes every segment older than `live` and makes it the live one. */
  retire(live: number): void {
    this.generation = live;
    for (const { generation } of listSegments(this.dir))
      if (generation < live) rmSync(this.path(generation), { force: true });
  }

  unlock(): void {
    rmSync(join(this.dir, LOCK_FILE), { force: true });
    openHere.delete(this.dir);
  }
}

export interface Recovery {
  segments: Segments;
  /** Operations to replay, oldest first. */
  ops: JournalOp[];
}

/**
 * Locks the folder and reads the newest usable segment up to its first torn or corrupt record.
 * A cut tail is reported in one log line; an unusable segment is moved aside, never retried.
 */
export function recoverSegments(dir: string, log: (line: string) => void): Recovery {
  mkdirSync(dir, { recursive: true });
  lockFolder(dir);
  for (const f of readdirSync(dir)) if (f.endsWith('.tmp')) rmSync(join(dir, f), { force: true });
  for (const { name, generation } of listSegments(dir).reverse()) {
    const file = join(dir, name);
    const content = readFileSync(file);
    const scan = scanSegment(content);
    if (scan.records === 0) {
      renameSync(file, `${file}.corrupt`);
      log(`servicebus: ${name} is unusable (${scan.problem ?? 'no snapshot record'}); moved aside to ${name}.corrupt`);
      continue;
    }
    if (scan.problem) {
      const cut = content.length - scan.validBytes;
      log(
        `servicebus: ${name} ends in a torn or corrupt record (${scan.problem}): kept ${scan.records} records ` +
          `(${scan.validBytes} bytes), cut ${cut} bytes; a write cut short by a crash was never acknowledged`,
      );
    }
    return { segments: new Segments(dir, generation, scan.validBytes), ops: scan.ops };
  }
  return { segments: new Segments(dir, 0, 0), ops: [] };
}

/** Writes `ops` as the first record of segment `generation` (tmp, fsync, rename, fsync the folder). */
export async function writeSegment(seg: Segments, generation: number, ops: JournalOp[]): Promise<number> {
  const bytes = Buffer.concat([SEGMENT_MAGIC, frameRecord(encodeOps(ops))]);
  // '.tmp': what recoverSegments removes as a write that never finished.
  await writeFileDurably(seg.path(generation), bytes, '.tmp');
  return bytes.length;
}

/** The same, synchronously: start-up writes the recovered state before serving anyone. */
export function writeSegmentSync(seg: Segments, generation: number, ops: JournalOp[]): number {
  const bytes = Buffer.concat([SEGMENT_MAGIC, frameRecord(encodeOps(ops))]);
  const tmp = `${seg.path(generation)}.tmp`;
  const fd = openSync(tmp, 'w');
  try {
    for (let at = 0; at < bytes.length;) at += writeSync(fd, bytes, at);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, seg.path(generation));
  syncFolder(seg.dir);
  return bytes.length;
}

function listSegments(dir: string): { name: string; generation: number }[] {
  return readdirSync(dir)
    .map((name) => ({ name, m: SEGMENT.exec(name) }))
    .filter((x): x is { name: string; m: RegExpExecArray } => x.m !== null)
    .map(({ name, m }) => ({ name, generation: Number(m[1]) }))
    .sort((a, b) => a.generation - b.generation);
}

function lockFolder(dir: string): void {
  if (openHere.has(dir)) throw new Error(`Service Bus data folder ${dir} is already open in this process`);
  const lock = join(dir, LOCK_FILE);
  if (existsSync(lock)) {
    const pid = Number(readFileSync(lock, 'utf8').trim());
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && isAlive(pid)) {
      throw new Error(
        `Service Bus data folder ${dir} is in use by process ${pid}; stop that broker or use another folder (SERVICEBUS_DATA_DIR)`,
      );
    }
  }
  writeFileSync(lock, `${process.pid}\n`);
  openHere.add(dir);
}

/** Alive and, where /proc tells, a Node process (after a reboot the pid may belong to anything). */
function isAlive(pid: number): boolean {
  return processRunning(pid, (cmdline) => /node/i.test(cmdline));
}

function syncFolder(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
