/** Quiet logs for the apps under test: warnings and errors are kept (and counted), info is dropped. */
import type { Logger } from '../../../shared/ports';
import type { HostLog } from '../../devstack/host/invocation';

export const problems: string[] = [];
/** The last 50, kept apart: a timeout late in a run explains itself after the first 200 are full. */
export const recentProblems: string[] = [];

const keep = (line: string): void => {
  if (problems.length < 200) problems.push(line);
  recentProblems.push(line);
  if (recentProblems.length > 50) recentProblems.shift();
  if (process.env.BENCH_VERBOSE === '1') console.warn(line);
};

export const benchLog: Logger = {
  info: (m) => {
    if (process.env.BENCH_VERBOSE === '1') console.log(m);
  },
  warn: (m) => keep(`warn: ${m}`),
  error: (m) => keep(`error: ${m}`),
};

export const hostLog: HostLog = (level, fn, message) => {
  if (level === 'error' || level === 'warning') keep(`${level} ${fn}: ${message}`);
  else if (process.env.BENCH_VERBOSE === '1') console.log(`${fn}: ${message}`);
};
