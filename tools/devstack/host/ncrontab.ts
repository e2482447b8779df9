/**
 * NCRONTAB, the six-field schedule of Azure Functions timer triggers:
 * `{second} {minute} {hour} {day} {month} {day-of-week}`, with `*`, lists, ranges and steps.
 * Times are UTC, as on Azure unless WEBSITE_TIME_ZONE is set.
 */

const FIELDS = [
  { name: 'second', min: 0, max: 59 },
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12 },
  { name: 'day-of-week', min: 0, max: 6 },
] as const;

const NAMES: Record<string, number> = {
  jan: 1, feb: 2, mar: 3, apr: 4, may: 5, jun: 6, jul: 7, aug: 8, sep: 9, oct: 10, nov: 11, dec: 12,
  sun: 0, mon: 1, tue: 2, wed: 3, thu: 4, fri: 5, sat: 6,
};

export interface Schedule {
  readonly expression: string;
  /** The first matching instant strictly after `after`. */
  next(after: Date): Date;
}

function value(token: string, field: (typeof FIELDS)[number], expression: string): number {
  const named = NAMES[token.toLowerCase()];
  const n = named ?? (/^\d+$/.test(token) ? Number(token) : NaN);
  // Day-of-week 7 is Sunday too.
  const v = field.name === 'day-of-week' && n === 7 ? 0 : n;
  if (!Number.isInteger(v) || v < field.min || v > field.max) {
    throw new Error(`NCRONTAB "${expression}": ${field.name} value "${token}" is outside ${field.min}-${field.max}`);
  }
  return v;
}

function parseField(text: string, field: (typeof FIELDS)[number], expression: string): Set<number> {
  const out = new Set<number>();
  for (const part of text.split(',')) {
    const [range, stepText] = part.split('/');
    const step = stepText === undefined ? 1 : Number(stepText);
    if (!Number.isInteger(step) || step < 1) throw new Error(`NCRONTAB "${expression}": bad step in ${field.name} "${part}"`);
    let lo: number = field.min;
    let hi: number = field.max;
    if (range !== '*' && range !== undefined) {
      const [a, b] = range.split('-');
      lo = value(a ?? '', field, expression);
      hi = b === undefined ? (stepText === undefined ? lo : field.max) : value(b, field, expression);
    }
    if (hi < lo) throw new Error(`NCRONTAB "${expression}": empty range in ${field.name} "${part}"`);
    for (let v = lo; v <= hi; v += step) out.add(v);
  }
  return out;
}

export function parseNcrontab(expression: string): Schedule {
  const parts = expression.trim().split(/\s+/);
  if (parts.length !== 6) throw new Error(`NCRONTAB "${expression}" must have 6 fields (second minute hour day month day-of-week)`);
  const [sec, min, hour, day, month, dow] = parts.map((p, i) => parseField(p, FIELDS[i] as (typeof FIELDS)[number], expression)) as [
    Set<number>, Set<number>, Set<number>, Set<number>, Set<number>, Set<number>,
  ];
  const dayRestricted = parts[3] !== '*';
  const dowRestricted = parts[5] !== '*';
  const dayMatches = (d: Date): boolean => {
    const dm = day.has(d.getUTCDate());
    const wm = dow.has(d.getUTCDay());
    // Cron rule: when both are restricted, either may match.
    if (dayRestricted && dowRestricted) return dm || wm;
    return dm && wm;
  };
  return {
    expression,
    next(after: Date): Date {
      const t = new Date(Math.floor(after.getTime() / 1000) * 1000 + 1000);
      // Bounded search: any valid schedule fires within ~4 years (Feb 29).
      for (let guard = 0; guard < 5 * 366 * 24 * 60; guard++) {
        if (!month.has(t.getUTCMonth() + 1) || !dayMatches(t)) {
          t.setUTCHours(0, 0, 0, 0);
          t.setUTCDate(t.getUTCDate() + 1);
          continue;
        }
        if (!hour.has(t.getUTCHours())) {
          t.setUTCMinutes(0, 0, 0);
          t.setUTCHours(t.getUTCHours() + 1);
          continue;
        }
        if (!min.has(t.getUTCMinutes())) {
          t.setUTCSeconds(0, 0);
          t.setUTCMinutes(t.getUTCMinutes() + 1);
          continue;
        }
        for (let s = t.getUTCSeconds(); s < 60; s++) {
          if (sec.has(s)) {
            t.setUTCSeconds(s, 0);
            return t;
          }
        }
        t.setUTCSeconds(0, 0);
        t.setUTCMinutes(t.getUTCMinutes() + 1);
      }
      throw new Error(`NCRONTAB "${expression}" never fires`);
    },
  };
}
