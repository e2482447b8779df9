/**
 * How the CLI prints: colour only on a terminal and never with NO_COLOR (or TERM=dumb),
 * progress bars (cli-progress) on stderr that turn into plain timestamped lines when stderr
 * is not a terminal, and small aligned tables.
 */
import { SingleBar } from 'cli-progress';

type Stream = NodeJS.WriteStream;

export function colorEnabled(stream: Stream, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.TERM === 'dumb') return false;
  return stream.isTTY === true;
}

const CODES = { red: 31, green: 32, yellow: 33, blue: 34, dim: 2, bold: 1 } as const;
type Color = keyof typeof CODES;

export interface Painter {
  (color: Color, text: string): string;
}

export function painter(stream: Stream): Painter {
  const on = colorEnabled(stream);
  return (color, text) => (on ? `\x1b[${CODES[color]}m${text}\x1b[0m` : text);
}

export const num = (n: number | null | undefined): string =>
  n === null || n === undefined ? '–' : n.toLocaleString('en-US');

export function age(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined) return '–';
  if (seconds < 90) return `${Math.round(seconds)} s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}

export function duration(ms: number | undefined): string {
  if (ms === undefined) return '–';
  return ms < 10_000 ? `${num(Math.round(ms))} ms` : `${(ms / 1000).toFixed(1)} s`;
}

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/** Minor units as a decimal amount in the currency's own exponent (JPY 0, EUR 2). */
export function money(minor: number, currency: string): string {
  let digits = 2;
  try {
    digits =
      new Intl.NumberFormat('en-US', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ?? 2;
  } catch {
    // an unknown code keeps two decimals
  }
  return (minor / 10 ** digits).toLocaleString('en-US', {
    minimumFractionDigits: digits,
    maximumFractionDigits: digits,
  });
}

const visible = (s: string): number => s.replace(/\x1b\[[0-9;]*m/g, '').length;

/** Left-aligned columns, numbers (the `numeric` column indexes) right-aligned; colour-aware widths. */
export function table(
  head: readonly string[],
  rows: readonly (readonly string[])[],
  numeric: readonly number[] = [],
): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => visible(r[i] ?? ''))));
  const pad = (c: string, i: number): string => {
    const fill = ' '.repeat(Math.max(0, (widths[i] ?? 0) - visible(c)));
    return numeric.includes(i) ? fill + c : c + fill;
  };
  const line = (cells: readonly string[]): string => cells.map(pad).join('  ').trimEnd();
  return [line(head), ...rows.map(line)].join('\n');
}

export interface Progress {
  start(total: number, value: number, payload?: Record<string, string>): void;
  update(value: number, payload?: Record<string, string>): void;
  setTotal(total: number): void;
  stop(): void;
}

/**
 * Off a terminal, cli-progress writes its line every `notTTYSchedule` ms whether it changed or
 * not. This passes a line on only when it changed, or as a heartbeat after `quietMs`.
 */
export function changedLinesOnly(stream: Stream, quietMs = 10_000, now: () => number = Date.now): Stream {
  let partial = '';
  let last = '';
  let lastAt = 0;
  const write = (chunk: string | Uint8Array): boolean => {
    partial += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    for (let i = partial.indexOf('\n'); i >= 0; i = partial.indexOf('\n')) {
      const line = partial.slice(0, i);
      partial = partial.slice(i + 1);
      if (line === '' || (line === last && now() - lastAt < quietMs)) continue;
      last = line;
      lastAt = now();
      stream.write(`${line}\n`);
    }
    return true;
  };
  return { isTTY: false, columns: undefined, write } as unknown as Stream;
}

/**
 * A bar on stderr: redrawn in place on a terminal; off a terminal (a log, a CI capture) a plain
 * line without escape codes whenever it changes (checked every `plainEveryMs`). Silent when
 * `enabled` is false.
 */
export function progressBar(
  label: string,
  unit: string,
  enabled: boolean,
  plainEveryMs = 1000,
  stream: Stream = process.stderr,
): Progress {
  if (!enabled) return { start: () => {}, update: () => {}, setTotal: () => {}, stop: () => {} };
  const tty = stream.isTTY === true;
  const bar = new SingleBar({
    stream: tty ? stream : changedLinesOnly(stream),
    format: `${label.padEnd(9)} [{bar}] {percentage}% | {value}/{total} ${unit}{note}`,
    barCompleteChar: tty ? '\u2588' : '#',
    barIncompleteChar: tty ? '\u2591' : '-',
    barsize: tty ? 30 : 20,
    hideCursor: tty,
    // Off a terminal every line is final already; clearing would only add a blank line.
    clearOnComplete: !tty,
    noTTYOutput: true,
    notTTYSchedule: plainEveryMs,
    gracefulExit: true,
    formatValue: (v, _o, type) => (type === 'value' || type === 'total' ? num(v) : String(v)),
  });
  return {
    start: (total, value, payload) => bar.start(total, value, { note: '', ...payload }),
    update: (value, payload) => bar.update(value, payload),
    setTotal: (total) => bar.setTotal(total),
    stop: () => bar.stop(),
  };
}
