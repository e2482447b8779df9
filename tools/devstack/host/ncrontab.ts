/**
 * NCRONTAB, the cron schedule of Azure Functions timer triggers: six fields
 * `{second} {minute} {hour} {day} {month} {day-of-week}`, or five without the seconds (the
 * timer extension reads five fields as minute-first and anything else as second-first), with `*`,
 * lists, ranges, steps and names. Times are UTC, as on Azure unless WEBSITE_TIME_ZONE is set.
 * croner does the matching: its six-part mode is this grammar, and it keeps cron's rule that when
 * day and day-of-week are both restricted either may match. Which expressions the host takes at
 * all is timer-schedule.ts's `isNcrontab` (croner alone would also take day-of-week 7).
 */
import { Cron } from 'croner';

export interface Schedule {
  readonly expression: string;
  /** The first matching instant strictly after `after`. */
  next(after: Date): Date;
}

export function parseNcrontab(expression: string): Schedule {
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5 && fields.length !== 6)
    throw new Error(
      `NCRONTAB "${expression}" must have 6 fields (second minute hour day month day-of-week) or 5 (no second)`,
    );
  // Five fields fire at second 0 of each matching minute, as NCrontab without IncludingSeconds does.
  const pattern = (fields.length === 5 ? ['0', ...fields] : fields).join(' ');
  let cron: Cron;
  try {
    // No callback: croner only evaluates the pattern, it starts no timer (timers.ts schedules).
    cron = new Cron(pattern, { timezone: 'UTC', mode: '6-part', domAndDow: false });
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
