/**
 * .NET `TimeSpan.TryParse` with the invariant culture, which both the timer extension (a schedule
 * that is not a cron expression) and the host's configuration binder (host.json durations) use:
 * `[-]d`, `[-][d.]hh:mm[:ss[.fffffff]]` or `[-]d:hh:mm:ss[.fffffff]`.
 */

/** Milliseconds, or undefined when .NET would not parse it. */
export function parseTimeSpan(text: string): number | undefined {
  const trimmed = text.trim();
  const sign = trimmed.startsWith('-') ? -1 : 1;
  const s = trimmed.replace(/^-/, '');
  if (/^\d{1,8}$/.test(s)) return Number(s) <= 10_675_199 ? sign * Number(s) * 86_400_000 : undefined;
  const m =
    /^(?:(\d{1,8})\.)?(\d{1,2}):(\d{1,2})(?::(\d{1,2})(\.\d{1,7})?)?$/.exec(s) ??
    /^(\d{1,8}):(\d{1,2}):(\d{1,2}):(\d{1,2})(\.\d{1,7})?$/.exec(s);
  if (!m) return undefined;
  const [, d, h, min, sec, fraction] = m;
  if (Number(h) > 23 || Number(min) > 59 || Number(sec ?? 0) > 59) return undefined;
  const seconds = ((Number(d ?? 0) * 24 + Number(h)) * 60 + Number(min)) * 60 + Number(sec ?? 0);
  return sign * Math.round((seconds + Number(fraction ?? 0)) * 1000);
}
