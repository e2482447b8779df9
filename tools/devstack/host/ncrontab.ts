/**
 * NCRONTAB, the six-field schedule of Azure Functions timer triggers:
 * `{second} {minute} {hour} {day} {month} {day-of-week}`, with `*`, lists, ranges, steps and
 * names. Times are UTC, as on Azure unless WEBSITE_TIME_ZONE is set. croner does the matching:
 * its six-part mode is this grammar (day-of-week 7 is Sunday too), and it keeps cron's rule that
 * when day and day-of-week are both restricted either may match.
 */
import { Cron } from 'croner';

export interface Schedule {
  readonly expression: string;
  /** The first matching instant strictly after `after`. */
  next(after: Date): Date;
}

export function parseNcrontab(expression: string): Schedule {
  // croner's own 5-or-6 detection would take a five-field Unix cron line; the host does not.
  if (expression.trim().split(/\s+/).length !== 6)
    throw new Error(`NCRONTAB "${expression}" must have 6 fields (second minute hour day month day-of-week)`);
  let cron: Cron;
  try {
    // No callback: croner only evaluates the pattern, it starts no timer (timers.ts schedules).
    cron = new Cron(expression.trim(), { timezone: 'UTC', mode: '6-part', domAndDow: false });
  } catch (e) {
    throw new Error(`NCRONTAB "${expression}": ${(e as Error).message.replace(/^CronPattern:\s*/, '')}`);
  }
  return {
    expression,
    next(after: Date): Date {
      const next = cron.nextRun(after);
      if (!next) throw new Error(`NCRONTAB "${expression}" never fires`);
      return next;
    },
  };
}
