/** Runs captured timer triggers on their schedules (NCRONTAB or TimeSpan); one run at a time per function. */
import { type HostLog, invocationContext, resolveSetting } from './invocation';
import { type Registration, stringProp, triggerOf } from './registry';
import { parseTimerSchedule } from './timer-schedule';

export interface TimerHost {
  readonly schedules: { functionName: string; expression: string; next: Date }[];
  /** Stops scheduling and waits for a run in progress. */
  close(): Promise<void>;
}

export function startTimers(
  functions: Registration[],
  env: Readonly<Record<string, string | undefined>>,
  log: HostLog,
  now: () => number = Date.now,
): TimerHost {
  const timers = new Set<NodeJS.Timeout>();
  const running = new Set<Promise<unknown>>();
  const schedules: TimerHost['schedules'] = [];
  let closed = false;
  for (const f of functions.filter((r) => triggerOf(r).type === 'timerTrigger')) {
    const raw = stringProp(triggerOf(f), 'schedule') ?? '';
    const schedule = parseTimerSchedule(resolveSetting(raw, env, `timer ${f.name} schedule "${raw}"`));
    let last: Date | undefined;
    const arm = (): void => {
      if (closed) return;
      const next = schedule.next(new Date(now()));
      const entry = schedules.find((s) => s.functionName === f.name);
      if (entry) entry.next = next;
      else schedules.push({ functionName: f.name, expression: schedule.expression, next });
      // setTimeout caps at ~24.8 days; re-arm in steps for schedules further out.
      const t = setTimeout(
        () => {
          timers.delete(t);
          if (now() + 1000 < next.getTime()) return arm();
          const timer = {
            isPastDue: false,
            schedule: { adjustForDST: false },
            scheduleStatus: {
              last: last?.toISOString(),
              next: next.toISOString(),
              lastUpdated: new Date(now()).toISOString(),
            },
          };
          last = next;
          const run = Promise.resolve(f.handler(timer, invocationContext(f.name, log)))
            .catch((e: unknown) => log('error', f.name, `timer run failed: ${(e as Error).message}`))
            .finally(() => {
              running.delete(run);
              arm();
            });
          running.add(run);
        },
        Math.min(Math.max(0, next.getTime() - now()), 2 ** 31 - 1),
      );
      timers.add(t);
    };
    arm();
  }
  return {
    schedules,
    close: async () => {
      closed = true;
      for (const t of timers) clearTimeout(t);
      await Promise.all(running);
    },
  };
}
