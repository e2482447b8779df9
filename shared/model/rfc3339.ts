/** RFC 3339 date-times, the one format a transaction's timestamp may take. */

const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Proleptic Gregorian, as RFC 3339 uses (year 0000 is a leap year; Date.UTC would read it as 1900). */
function daysInMonth(y: number, mo: number): number {
  const leap = y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
  return mo === 2 && leap ? 29 : (DAYS[mo - 1] as number);
}

/** The value of `n` ASCII digits at `i`, or -1 if any of them is not 0-9. */
function digitsAt(s: string, i: number, n: number): number {
  let v = 0;
  for (let k = i; k < i + n; k++) {
    const c = s.charCodeAt(k) - 48;
    if (!(c >= 0 && c <= 9)) return -1; // also past the end, where c is NaN
    v = v * 10 + c;
  }
  return v;
}

/**
 * RFC 3339 date-time with real calendar bounds (no Feb 30, no hour 24):
 * `YYYY-MM-DD(T|t)hh:mm:ss[.f{1,9}](Z|z|±hh:mm)`, hours ≤ 23, minutes ≤ 59, seconds ≤ 60
 * (leap second), offset hours ≤ 23. Hand-scanned rather than a regex plus a Date: it runs
 * for every transaction, and a regex plus a Date costs several times as much.
 */
export function isRfc3339(value: string): boolean {
  const len = value.length;
  if (len < 20) return false;
  const y = digitsAt(value, 0, 4);
  const mo = digitsAt(value, 5, 2);
  const d = digitsAt(value, 8, 2);
  const h = digitsAt(value, 11, 2);
  const mi = digitsAt(value, 14, 2);
  const s = digitsAt(value, 17, 2);
  if (y < 0 || mo < 0 || d < 0 || h < 0 || mi < 0 || s < 0) return false;
  const t = value.charCodeAt(10);
  if (
    value.charCodeAt(4) !== 45 ||
    value.charCodeAt(7) !== 45 ||
    (t !== 84 && t !== 116) ||
    value.charCodeAt(13) !== 58 ||
    value.charCodeAt(16) !== 58
  )
    return false;
  let i = 19;
  if (value.charCodeAt(i) === 46) {
    let n = 0;
    for (i++; i < len && digitsAt(value, i, 1) >= 0; i++) n++;
    if (n < 1 || n > 9) return false;
  }
  const z = value.charCodeAt(i);
  if (z === 90 || z === 122) {
    if (i + 1 !== len) return false;
  } else if (z === 43 || z === 45) {
    if (i + 6 !== len || value.charCodeAt(i + 3) !== 58) return false;
    const oh = digitsAt(value, i + 1, 2);
    const om = digitsAt(value, i + 4, 2);
    if (oh < 0 || om < 0 || oh > 23 || om > 59) return false;
  } else return false;
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 60) return false;
  return d <= daysInMonth(y, mo);
}
