/** The local host's pure parts: NCRONTAB schedules, route templates, host.json timespans. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { timespanMs } from '../../host/host-json';
import { resolveSetting } from '../../host/invocation';
import { parseNcrontab } from '../../host/ncrontab';
import { compileTemplate } from '../../host/routes';
import { parseTimerSchedule, unrecognisedSchedule } from '../../host/timer-schedule';

const at = (iso: string): Date => new Date(iso);

describe('NCRONTAB', () => {
  test('every five minutes, on the minute', () => {
    const s = parseNcrontab('0 */5 * * * *');
    assert.equal(s.next(at('2026-11-20T10:02:30Z')).toISOString(), '2026-11-20T10:05:00.000Z');
    assert.equal(s.next(at('2026-11-20T10:05:00Z')).toISOString(), '2026-11-20T10:10:00.000Z');
    assert.equal(s.next(at('2026-11-20T23:58:00Z')).toISOString(), '2026-11-21T00:00:00.000Z');
  });
  test('lists, ranges, steps, names and day-of-week', () => {
    assert.equal(
      parseNcrontab('30 15 9-17/4 * * MON-FRI').next(at('2026-11-20T18:00:00Z')).toISOString(),
      '2026-11-23T09:15:30.000Z',
    ); // Fri evening → Mon
    assert.equal(
      parseNcrontab('0 0 0 29 FEB *').next(at('2026-03-01T00:00:00Z')).toISOString(),
      '2028-02-29T00:00:00.000Z',
    );
    assert.equal(
      parseNcrontab('5,10 * * * * *').next(at('2026-01-01T00:00:07Z')).toISOString(),
      '2026-01-01T00:00:10.000Z',
    );
    assert.equal(
      parseNcrontab('0 0 12 * * 0').next(at('2026-11-20T00:00:00Z')).toISOString(),
      '2026-11-22T12:00:00.000Z',
    ); // 0 = Sunday
  });
  test('five fields are minute-first and fire at second 0, as NCrontab reads them', () => {
    const s = parseNcrontab('*/5 * * * *');
    assert.equal(s.next(at('2026-11-20T10:02:30Z')).toISOString(), '2026-11-20T10:05:00.000Z');
    assert.equal(
      parseNcrontab('30 9 * * MON').next(at('2026-11-20T00:00:00Z')).toISOString(),
      '2026-11-23T09:30:00.000Z',
    );
  });
  test('bad expressions are rejected with the field named', () => {
    assert.throws(() => parseNcrontab('* * * *'), /6 fields .* or 5/);
    assert.throws(() => parseNcrontab('1 2 3 4 5 6 7'), /6 fields .* or 5/);
    assert.throws(() => parseNcrontab('0 61 * * * *'), /NCRONTAB "0 61 \* \* \* \*": Invalid value for minute: 61/);
    assert.throws(() => parseNcrontab('0 0 * * * */0'), /illegal stepping/);
  });
});

describe("the local runner's timer schedules: what the host's timer extension takes, in its order", () => {
  test('cron first: five or six fields', () => {
    assert.equal(
      parseTimerSchedule('0 */5 * * * *').next(at('2026-11-20T10:02:30Z')).toISOString(),
      '2026-11-20T10:05:00.000Z',
    );
    assert.equal(
      parseTimerSchedule('*/5 * * * *').next(at('2026-11-20T10:02:30Z')).toISOString(),
      '2026-11-20T10:05:00.000Z',
    );
  });
  test('then a TimeSpan: every interval from the last run (ConstantSchedule)', () => {
    const s = parseTimerSchedule('00:05:00');
    assert.equal(s.next(at('2026-11-20T10:02:30Z')).toISOString(), '2026-11-20T10:07:30.000Z');
    assert.equal(
      parseTimerSchedule('1.00:00:00').next(at('2026-11-20T10:00:00Z')).toISOString(),
      '2026-11-21T10:00:00.000Z',
    );
    // A bare number is one field, so not cron: TimeSpan.TryParse reads "5" as five days.
    assert.equal(parseTimerSchedule('5').next(at('2026-11-20T00:00:00Z')).toISOString(), '2026-11-25T00:00:00.000Z');
  });
  test("the rest is refused with the host's own message; day-of-week 7 is not Sunday in NCrontab", () => {
    for (const s of ['0 0 12 * * 7', '0 61 * * * *', '* * * *', '1 2 3 4 5 6 7', 'every night', '24:00:00'])
      assert.throws(() => parseTimerSchedule(s), { message: unrecognisedSchedule(s) }, s);
  });
  test('a zero or negative TimeSpan, which the host would run without pause, is refused', () => {
    assert.throws(() => parseTimerSchedule('00:00:00'), /only positive intervals/);
    assert.throws(() => parseTimerSchedule('-00:00:30'), /only positive intervals/);
  });
});

describe('route templates', () => {
  test('parameters, optional segments and literal segments', () => {
    const m = compileTemplate('api/batches/{batchId}/report');
    assert.deepEqual(m('/api/batches/b-1/report'), { batchId: 'b-1' });
    assert.deepEqual(m('/API/batches/b-1/report/'), { batchId: 'b-1' });
    assert.equal(m('/api/batches/b-1'), undefined);
    assert.equal(m('/api/batches//report'), undefined);
    const opt = compileTemplate('api/items/{id:int?}');
    assert.deepEqual(opt('/api/items'), {});
    assert.deepEqual(opt('/api/items/7'), { id: '7' });
  });
});

describe('host.json and app-setting expressions', () => {
  test('timespans', () => {
    assert.equal(timespanMs('00:10:00'), 600_000);
    assert.equal(timespanMs('00:00:00.20'), 200);
    assert.equal(timespanMs('1.00:00:01'), 86_401_000);
    assert.throws(() => timespanMs('10m'), /timespan/);
  });
  test('%SETTING% resolves from app settings; an unset one is an error naming it', () => {
    assert.equal(resolveSetting('%S%', { S: '0 */5 * * * *' }, 'timer'), '0 */5 * * * *');
    assert.throws(() => resolveSetting('%MISSING%', {}, 'timer t'), /timer t refers to app setting MISSING/);
  });
});
