/**
 * Whether the Functions host's timer extension would take a schedule: `TimerSchedule.Create`
 * (azure-webjobs-sdk-extensions, Extensions/Timers/Scheduling/TimerSchedule.cs) tries
 * `CronSchedule.TryCreate` (NCrontab; six fields with seconds, or five without, by field count),
 * then `TimeSpan.TryParse`, and otherwise refuses the function with the message below.
 * `parseTimerSchedule` is the schedule timers.ts runs, in the same order: a cron expression
 * (ncrontab.ts), else a TimeSpan, which fires every interval from the last run (ConstantSchedule:
 * `now + interval`), else the host's refusal.
 */
import { parseTimeSpan } from './dotnet-timespan';
import { parseNcrontab, type Schedule } from './ncrontab';

export const unrecognisedSchedule = (expression: string): string =>
  `The schedule expression '${expression}' was not recognized as a valid cron expression or timespan string.`;

interface Field {
  min: number;
  max: number;
  names?: readonly string[];
}

const MONTHS = [
  'january',
  'february',
  'march',
  'april',
  'may',
  'june',
  'july',
  'august',
  'september',
  'october',
  'november',
  'december',
];
const DAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];
// NCrontab's CrontabFieldImpl ranges: day-of-week is 0–6 (7 is not Sunday there, unlike Unix cron).
const SECOND: Field = { min: 0, max: 59 };
const MINUTE: Field = { min: 0, max: 59 };
const HOUR: Field = { min: 0, max: 23 };
const DAY: Field = { min: 1, max: 31 };
const MONTH: Field = { min: 1, max: 12, names: MONTHS };
const DAY_OF_WEEK: Field = { min: 0, max: 6, names: DAYS };

function value(text: string, field: Field): number | undefined {
  if (/^\d+$/.test(text)) {
    const n = Number(text);
    return n >= field.min && n <= field.max ? n : undefined;
  }
  // NCrontab matches names by their first three letters or more, case-insensitively.
  const lower = text.toLowerCase();
  const index = lower.length >= 3 ? (field.names ?? []).findIndex((n) => n.startsWith(lower)) : -1;
  if (index < 0) return undefined;
  return field === MONTH ? index + 1 : index;
}

function fieldOk(text: string, field: Field): boolean {
  return text.split(',').every((item) => {
    const [range, step, extra] = item.split('/');
    if (extra !== undefined || range === undefined || range === '') return false;
    if (step !== undefined && !(/^\d+$/.test(step) && Number(step) > 0)) return false;
    if (range === '*') return true;
    const [from, to, more] = range.split('-');
    if (more !== undefined || from === undefined) return false;
    const a = value(from, field);
    if (a === undefined) return false;
    if (to === undefined) return true;
    const b = value(to, field);
    return b !== undefined && a <= b;
  });
}

/** NCrontab with IncludingSeconds when there are not exactly five fields. */
export function isNcrontab(expression: string): boolean {
  const fields = expression.trim().split(/\s+/);
  const layout =
    fields.length === 5
      ? [MINUTE, HOUR, DAY, MONTH, DAY_OF_WEEK]
      : fields.length === 6
        ? [SECOND, MINUTE, HOUR, DAY, MONTH, DAY_OF_WEEK]
        : undefined;
  return layout !== undefined && fields.every((f, i) => fieldOk(f, layout[i] as Field));
}

/** The host's rule: a cron expression NCrontab parses, or a TimeSpan. */
export function isTimerSchedule(expression: string): boolean {
  return isNcrontab(expression) || parseTimeSpan(expression) !== undefined;
}

/** The schedule the local runner keeps; throws the host's message for what the host refuses. */
export function parseTimerSchedule(expression: string): Schedule {
  if (isNcrontab(expression)) return parseNcrontab(expression);
  const interval = parseTimeSpan(expression);
  if (interval === undefined) throw new Error(unrecognisedSchedule(expression));
  // The host takes a zero or negative TimeSpan and then fires without pause; the runner will not spin.
  if (interval <= 0)
    throw new Error(
      `The schedule '${expression}' is a TimeSpan of ${interval} ms: the local host runs only positive intervals.`,
    );
  return { expression, next: (after) => new Date(after.getTime() + interval) };
}
