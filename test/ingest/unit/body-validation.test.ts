import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';

import { VALIDATION_STATUS } from '../../../functions/http-errors';
import { ValidationError } from '../../../shared/errors';
import { bufferSource } from '../../../shared/ingest/body';
import { checkRecord } from '../../../shared/ingest/check-record';
import { duplicateKeys } from '../../../shared/ingest/duplicate-keys';
import { readRecords } from '../../../shared/ingest/records';
import { validateBody } from '../../../shared/ingest/validate-body';
import { isRfc3339 } from '../../../shared/model/rfc3339';
import { validateTransaction } from '../../../shared/model/validate-transaction';

const ok = { id: 't1', account: 'a1', timestamp: '2026-03-01T10:00:00Z', type: 'charge', amount: 100, currency: 'EUR' };

function fieldsOf(value: unknown): string[] {
  const r = validateTransaction(value, 1);
  return 'errors' in r ? r.errors.map((e) => e.field) : [];
}

async function collect(
  body: string,
  format: 'ndjson' | 'json',
): Promise<{ line: number; error?: string; value?: unknown }[]> {
  const out = [];
  for await (const r of readRecords(bufferSource(Buffer.from(body), false, 1e9)(), format)) {
    if (r.error !== undefined) {
      out.push(r);
      continue;
    }
    // Readers hand out text; checkRecord parses it, and names a record that is not JSON.
    const checked = checkRecord(r);
    const malformed =
      'errors' in checked ? checked.errors.find((d) => d.message.startsWith('malformed JSON')) : undefined;
    out.push(
      malformed ? { line: r.line, error: malformed.message } : { line: r.line, value: JSON.parse(r.text) as unknown },
    );
  }
  return out;
}

async function validationError(
  body: string | Buffer,
  format: 'ndjson' | 'json',
  gzip = false,
): Promise<ValidationError> {
  const buf = typeof body === 'string' ? Buffer.from(body) : body;
  try {
    await validateBody(bufferSource(buf, gzip, 1024 * 1024), format);
  } catch (e) {
    assert.ok(e instanceof ValidationError, `expected ValidationError, got ${String(e)}`);
    return e;
  }
  assert.fail('expected the body to be rejected');
}

describe('transaction schema', () => {
  test('a valid transaction passes and keeps only known fields in a fixed order', () => {
    const r = validateTransaction(
      { region: 'EU', currency: 'EUR', amount: 100, type: 'charge', timestamp: ok.timestamp, account: 'a1', id: 't1' },
      1,
    );
    assert.ok('ok' in r);
    assert.deepEqual(Object.keys(r.ok), ['id', 'account', 'timestamp', 'type', 'amount', 'currency', 'region']);
  });
  const cases: [string, Record<string, unknown>, string][] = [
    ['missing id', { ...ok, id: undefined }, 'id'],
    ['id with a slash', { ...ok, id: 'a/b' }, 'id'],
    ['id too long', { ...ok, id: 'x'.repeat(65) }, 'id'],
    ['account empty', { ...ok, account: '' }, 'account'],
    ['timestamp not RFC 3339', { ...ok, timestamp: '2026-03-01 10:00' }, 'timestamp'],
    ['timestamp Feb 30', { ...ok, timestamp: '2026-02-30T00:00:00Z' }, 'timestamp'],
    ['type unknown', { ...ok, type: 'payment' }, 'type'],
    ['amount zero', { ...ok, amount: 0 }, 'amount'],
    ['amount fractional', { ...ok, amount: 10.5 }, 'amount'],
    ['amount as string', { ...ok, amount: '100' }, 'amount'],
    ['amount too large', { ...ok, amount: 1_000_000_001 }, 'amount'],
    ['currency lowercase', { ...ok, currency: 'eur' }, 'currency'],
    ['region not a code', { ...ok, region: 'e u' }, 'region'],
    ['unknown field', { ...ok, note: 'x' }, 'note'],
  ];
  for (const [name, value, field] of cases) {
    test(`rejects ${name}`, () => {
      const clean = Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined));
      assert.deepEqual(fieldsOf(clean), [field]);
    });
  }
  test('a non-object is rejected as a whole', () => {
    assert.deepEqual(fieldsOf([1, 2]), ['']);
    assert.deepEqual(fieldsOf('x'), ['']);
  });
  test('RFC 3339 offsets and fractions', () => {
    assert.ok(isRfc3339('2026-03-01T10:00:00.123456+05:30'));
    assert.ok(isRfc3339('2024-02-29T23:59:60Z'));
    assert.ok(!isRfc3339('2025-02-29T00:00:00Z'));
    assert.ok(!isRfc3339('2026-03-01T24:00:00Z'));
  });
});

describe('streaming record readers', () => {
  test('NDJSON: blank lines are skipped but counted; CRLF accepted', async () => {
    const recs = await collect('{"a":1}\r\n\n{"a":2}\n', 'ndjson');
    assert.deepEqual(
      recs.map((r) => [r.line, r.value]),
      [
        [1, { a: 1 }],
        [3, { a: 2 }],
      ],
    );
  });
  test('NDJSON: a malformed line is reported with its number and the rest still read', async () => {
    const recs = await collect('{"a":1}\n{oops\n{"a":3}', 'ndjson');
    assert.equal(recs.length, 3);
    assert.equal(recs[1]!.line, 2);
    assert.match(recs[1]!.error!, /malformed JSON/);
    assert.deepEqual(recs[2]!.value, { a: 3 });
  });
  test('JSON array: items with nested brackets and strings holding delimiters', async () => {
    const recs = await collect('[ {"a":"x],}"} , {"b":[1,{"c":2}]}, "s", 7 ]', 'json');
    assert.deepEqual(
      recs.map((r) => r.value),
      [{ a: 'x],}' }, { b: [1, { c: 2 }] }, 's', 7],
    );
    assert.deepEqual(
      recs.map((r) => r.line),
      [1, 2, 3, 4],
    );
  });
  test('JSON array: split across many small slices gives the same items', async () => {
    const text = JSON.stringify([ok, { ...ok, id: 't2', note: 'a"b\\' }]);
    function* bytewise(): Generator<Buffer> {
      for (const b of Buffer.from(text)) yield Buffer.from([b]);
    }
    const out = [];
    for await (const r of readRecords(bytewise(), 'json'))
      out.push(r.error === undefined ? (JSON.parse(r.text) as unknown) : r.error);
    assert.deepEqual(out, JSON.parse(text));
  });
  test('JSON: structural errors are fatal', async () => {
    for (const body of ['{"a":1}', '[{"a":1},]', '[{"a":1}', '[1] x', '']) {
      const recs = await collect(body, 'json');
      assert.ok(recs.at(-1)?.error, `expected an error for ${JSON.stringify(body)}`);
    }
    assert.deepEqual(await collect('[]', 'json'), []);
  });
});

describe('body validation', () => {
  test('collects every problem with line and field, at most 100 details', async () => {
    const lines = Array.from({ length: 150 }, (_, i) => JSON.stringify({ ...ok, id: `t${i}`, amount: -1 }));
    const e = await validationError(lines.join('\n'), 'ndjson');
    assert.equal(VALIDATION_STATUS[e.code], 400);
    assert.equal(e.code, 'invalid_batch');
    assert.equal(e.details.length, 100);
    assert.match(e.message, /150 problems \(first 100 shown\)/);
    assert.deepEqual(e.details[0], {
      line: 1,
      field: 'amount',
      message: 'must be an integer number of minor units from 1 to 1000000000',
    });
  });
  test('duplicate ids name both lines', async () => {
    const e = await validationError(
      [JSON.stringify(ok), JSON.stringify({ ...ok, account: 'b' }), JSON.stringify(ok)].join('\n'),
      'ndjson',
    );
    assert.deepEqual(
      e.details.map((d) => [d.line, d.field]),
      [
        [2, 'id'],
        [3, 'id'],
      ],
    );
    assert.match(e.details[0]!.message, /first seen at line 1/);
  });
  test('an empty batch is rejected, in its message: there is no line to name', async () => {
    const e = await validationError('\n\n', 'ndjson');
    assert.match(e.message, /empty/);
    assert.deepEqual(e.details, []);
    const e2 = await validationError('[]', 'json');
    assert.match(e2.message, /empty/);
    assert.deepEqual(e2.details, []);
  });
  test('a gzip bomb is refused with 413 once it inflates past the limit', async () => {
    const bomb = gzipSync(Buffer.alloc(8 * 1024 * 1024, 0x20)); // 8 MiB of spaces, ~8 KiB compressed
    assert.ok(bomb.length < 64 * 1024);
    const e = await validationError(bomb, 'ndjson', true);
    assert.equal(VALIDATION_STATUS[e.code], 413);
    assert.equal(e.code, 'too_large');
  });
  test('a body that is not gzip under Content-Encoding gzip is a 400', async () => {
    const e = await validationError('not gzip at all', 'ndjson', true);
    assert.equal(VALIDATION_STATUS[e.code], 400);
  });
  test('a valid gzip body passes and reports its count', async () => {
    const body = gzipSync(Buffer.from([JSON.stringify(ok), JSON.stringify({ ...ok, id: 't2' })].join('\n')));
    const summary = await validateBody(bufferSource(body, true, 1e6), 'ndjson');
    assert.equal(summary.transactions, 2);
    assert.match(summary.sha256, /^[0-9a-f]{64}$/);
  });
});

describe('repeated keys', () => {
  const dup =
    '{"id":"t1","account":"a1","timestamp":"2026-03-01T10:00:00Z","type":"charge","amount":1,"amount":2,"currency":"EUR"}';

  test('a record that repeats a key is rejected with a 400 naming the field', async () => {
    const e = await validationError([JSON.stringify({ ...ok, id: 't0' }), dup].join('\n'), 'ndjson');
    assert.equal(VALIDATION_STATUS[e.code], 400);
    assert.equal(e.code, 'invalid_batch');
    assert.deepEqual(
      e.details.map((d) => [d.line, d.field]),
      [[2, 'amount']],
    );
    assert.match(e.details[0]!.message, /duplicate key/);
  });

  test('keys are compared decoded, and in JSON arrays too', async () => {
    const escaped =
      '{"id":"t1","account":"a1","timestamp":"2026-03-01T10:00:00Z","type":"charge","\\u0061mount":1,"amount":2,"currency":"EUR"}';
    const e = await validationError(escaped, 'ndjson');
    assert.deepEqual(
      e.details.map((d) => d.field),
      ['amount'],
    );
    const e2 = await validationError(`[\n  ${JSON.stringify(ok)},\n  ${dup.replace('{', '{ ')}\n]`, 'json');
    assert.deepEqual(
      e2.details.map((d) => [d.line, d.field]),
      [[2, 'amount']],
    );
  });

  test("a repeat comes with the record's other problems", async () => {
    const e = await validationError(
      '{"id":"t1","account":"a1","timestamp":"2026-03-01T10:00:00Z","type":"charge","amount":1,"currency":"EUR","note":1,"note":2}',
      'ndjson',
    );
    assert.deepEqual(
      e.details.map((d) => [d.field, /duplicate/.test(d.message)]),
      [
        ['note', true],
        ['note', false],
      ],
    );
  });

  test('a valid record in any key order or spacing passes', async () => {
    const loose = `{ "currency": "EUR", "amount": 100, "type": "charge", "timestamp": "${ok.timestamp}", "account": "a1", "id": "t1" }`;
    const summary = await validateBody(bufferSource(Buffer.from(loose), false, 1e6), 'ndjson');
    assert.equal(summary.transactions, 1);
  });

  test('only top-level keys count; nested objects and strings that look like keys do not', () => {
    assert.deepEqual(duplicateKeys('{"a":{"b":1,"b":2},"c":"\\"a\\":","d":[{"a":1},{"a":2}]}'), []);
    assert.deepEqual(duplicateKeys('{"a":1,"b":{"a":2},"a":3,"b":4,"a":5}'), ['a', 'b']);
  });
});
