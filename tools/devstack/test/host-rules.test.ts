/**
 * The local host refuses what the Azure Functions host refuses (host-rules.ts). Each rule has a
 * small broken registration that it alone refuses, with the host's message, and a fixed one it
 * accepts; every function of the app passes every rule with the settings each infra variant deploys;
 * and a refused function stops the local host before it serves.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';

import { appSettingsOf, VARIANTS } from '../../../test/support/infra-snapshot';
import { repoRoot } from '../../../test/support/repo';
import { parseTimeSpan } from '../host/dotnet-timespan';
import { HOST_RULES, refusals, type RegisteredFunction } from '../host/host-rules';
import { checkRouteTemplate } from '../host/route-template';
import { isNcrontab } from '../host/timer-schedule';

type Bindings = RegisteredFunction['bindings'];

const http = (name: string, route: string | undefined, methods: string[] = ['GET']): RegisteredFunction => ({
  name,
  bindings: {
    httpTrigger1: {
      type: 'httpTrigger',
      direction: 'in',
      methods,
      authLevel: 'function',
      ...(route !== undefined ? { route } : {}),
    },
    $return: { type: 'http', direction: 'out' },
  },
});
const timer = (schedule: string): RegisteredFunction => ({
  name: 'sweep',
  bindings: { timerTrigger1: { type: 'timerTrigger', direction: 'in', schedule } },
});
const topic = (extra: Record<string, unknown>): RegisteredFunction => ({
  name: 'drain',
  bindings: {
    serviceBusTrigger1: { type: 'serviceBusTrigger', direction: 'in', connection: 'ServiceBusConnection', ...extra },
  },
});
const withBindings = (bindings: Bindings): RegisteredFunction => ({ name: 'f', bindings });

/** The rules that refuse `functions`; each broken fixture below must be refused by its rule only. */
const refusedBy = (functions: RegisteredFunction[], settings?: Record<string, string>): string[] =>
  refusals(functions, settings).map((r) => r.rule);
const messages = (functions: RegisteredFunction[], settings?: Record<string, string>): string[] =>
  refusals(functions, settings).map((r) => r.message);

/** One broken and one fixed registration per rule: the broken one is refused by that rule alone. */
const CASES: Record<string, { broken: RegisteredFunction[]; fixed: RegisteredFunction[]; message: string }> = {
  'function-name': {
    broken: [http('1status', 'status')],
    fixed: [http('status1', 'status')],
    message: "'1status' is not a valid function name.",
  },
  'unique-name': {
    broken: [http('status', 'a'), http('Status', 'b')],
    fixed: [http('status', 'a'), http('status2', 'b')],
    message: "The function or proxy name 'Status' must be unique within the function app.",
  },
  'binding-name': {
    broken: [withBindings({ 'http-trigger': { type: 'httpTrigger', direction: 'in', route: 'x' } })],
    fixed: [withBindings({ httpTrigger: { type: 'httpTrigger', direction: 'in', route: 'x' } })],
    message: 'The binding name http-trigger is invalid. Please assign a valid name to the binding.',
  },
  'one-trigger': {
    broken: [withBindings({ out: { type: 'queue', direction: 'out' } })],
    fixed: [withBindings({ t: { type: 'queueTrigger', direction: 'in' }, out: { type: 'queue', direction: 'out' } })],
    message: 'No trigger binding specified. A function must have a trigger input binding.',
  },
  'reserved-route': {
    broken: [http('opsStatus', 'admin/status')],
    fixed: [http('opsStatus', 'ops/status')],
    message: 'The specified route conflicts with one or more built in routes.',
  },
  'route-template': {
    broken: [http('getBatch', 'batches/{batchId')],
    fixed: [http('getBatch', 'batches/{batchId}')],
    message:
      "There is an incomplete parameter in the route template. Check that each '{' character has a matching '}' character.",
  },
  'route-conflict': {
    broken: [http('getBatch', 'batches/{id}', ['GET']), http('getBatch2', '/Batches/{ID}/', ['GET', 'DELETE'])],
    fixed: [http('getBatch', 'batches/{id}', ['GET']), http('deleteBatch', 'batches/{id}', ['DELETE'])],
    message: "The route specified conflicts with the route defined by function 'getBatch'.",
  },
  'timer-schedule': {
    broken: [timer('0 */5 * * *  * *')],
    fixed: [timer('0 */5 * * * *')],
    message:
      "The schedule expression '0 */5 * * *  * *' was not recognized as a valid cron expression or timespan string.",
  },
  'service-bus-entity': {
    broken: [topic({ topicName: 'work-detected' })],
    fixed: [topic({ topicName: 'work-detected', subscriptionName: 'drain' })],
    message:
      "The listener for function 'Functions.drain' was unable to start: topic 'work-detected' has no subscriptionName, and a topic trigger receives from a subscription.",
  },
};

describe('the local host refuses what the Functions host refuses', () => {
  test('every rule has a broken registration that it alone refuses', () => {
    assert.deepEqual(Object.keys(CASES).sort(), HOST_RULES.map((r) => r.id).sort());
    for (const [id, c] of Object.entries(CASES)) {
      // Without the rule, nothing refuses its fixture: each test below depends on its rule.
      const others = HOST_RULES.filter((r) => r.id !== id);
      assert.deepEqual(refusals(c.broken, undefined, others), [], `${id}: only ${id} may refuse its fixture`);
    }
  });

  for (const [id, c] of Object.entries(CASES)) {
    test(`${id}: refused with the host's message and the function's name; the fixed one passes`, () => {
      const refused = refusals(c.broken);
      assert.deepEqual(
        refused.map((r) => r.rule),
        [id],
      );
      assert.equal(refused[0]?.message, c.message);
      assert.equal(refused[0]?.functionName, c.broken.at(-1)?.name);
      assert.deepEqual(refusals(c.fixed), []);
    });
  }
});

describe('the rules in detail', () => {
  test('reserved routes: any route starting with admin or runtime, prefix or not, trimmed, any case', () => {
    for (const route of ['admin', '/Admin/status/', 'administration/x', 'runtime/webhooks/x', 'RUNTIMES']) {
      assert.deepEqual(refusedBy([http('f', route)]), ['reserved-route'], route);
    }
    for (const route of ['ops/admin', 'adm/x', 'status/runtime'])
      assert.deepEqual(refusedBy([http('f', route)]), [], route);
    // No route: the host uses the function's name, so a function named admin… is refused too.
    assert.deepEqual(refusedBy([http('adminStatus', undefined)]), ['reserved-route']);
  });

  test('function names: the host regex, 128 characters at most, not "host"', () => {
    for (const name of ['a', 'getBatch', 'a_b-c', 'x'.repeat(128)])
      assert.deepEqual(refusedBy([http(name, 'r')]), [], name);
    for (const name of ['', '_a', 'a.b', 'a b', 'x'.repeat(129), 'host', 'HOST'])
      assert.deepEqual(refusedBy([http(name, 'r')]), ['function-name'], name);
  });

  test('route conflicts: same route text and a method in common; no methods means every method', () => {
    assert.deepEqual(refusedBy([http('a', 'x', []), http('b', 'x', ['POST'])]), ['route-conflict']);
    assert.deepEqual(refusedBy([http('a', 'x', ['get']), http('b', 'x', ['GET'])]), ['route-conflict']);
    // The host compares the text: different parameter names are not a conflict at registration.
    assert.deepEqual(refusedBy([http('a', 'b/{x}'), http('b', 'b/{y}')]), []);
  });

  test('route templates: ASP.NET Core routing refuses these, with its messages', () => {
    const bad: [string, RegExp][] = [
      ['a//b', /separator character '\/' cannot appear consecutively/],
      ['~a', /cannot start with a '~'/],
      ['a/{b', /incomplete parameter/],
      ['a/b}', /incomplete parameter/],
      ['a/{}', /route parameter name '' is invalid/],
      ['a/{b{c}', /must be escaped with '\{\{' and '\}\}'/],
      ['a/{*rest}/b', /catch-all parameter can only appear as the last segment/],
      ['a/x{*rest}', /cannot contain a catch-all parameter/],
      ['a/{*rest?}', /catch-all parameter cannot be marked optional/],
      ['a/{b}{c}', /cannot contain two consecutive parameters/],
      ['a/{id}/{ID}', /'ID' appears more than one time/],
      ['a/b?c', /Literal sections cannot contain the '\?' character/],
      ['a/{b?}x', /optional parameter must be at the end of the segment/],
      ['a/x-{b?}', /Only a period \(\.\) can precede an optional parameter/],
      ['a/{b=1?}', /optional parameter cannot have default value/],
      ['a/{id:integer}', /unable to resolve the following inline constraint: 'integer'/],
    ];
    for (const [template, message] of bad) assert.throws(() => checkRouteTemplate(template), message, template);
    for (const template of [
      '',
      'batches',
      '/batches/{batchId}/',
      '~/x',
      'files/{*path}',
      'files/{**path}',
      'a/{id:int:min(1)}',
      'a/{id:regex(^\\d{{3}}$)}',
      'a/{name}.{ext?}',
      'a/{id?}',
      'a/{id=5}',
      'a/{{literal}}',
    ])
      assert.doesNotThrow(() => checkRouteTemplate(template), template);
  });

  test('timer schedules: NCRONTAB with six fields or five, or a TimeSpan, as the timer extension parses them', () => {
    for (const s of ['0 */5 * * * *', '*/5 * * * *', '0 0 9-17/4 * JAN-Mar mon-FRI', '0 0 0 1 1 *', '0 0 12 * * 6'])
      assert.ok(isNcrontab(s), s);
    for (const s of [
      '0 61 * * * *',
      '0 0 0 0 * *',
      '0 0 12 * * 7',
      '*/0 * * * * *',
      '* * * *',
      '1 2 3 4 5 6 7',
      'every night',
    ])
      assert.ok(!isNcrontab(s), s);
    for (const s of ['00:05:00', '1.00:00:00', '5', '1:02:03:04.5', '-00:00:30'])
      assert.notEqual(parseTimeSpan(s), undefined, s);
    assert.equal(parseTimeSpan('1.02:03:04.5'), ((26 * 60 + 3) * 60 + 4.5) * 1000);
    for (const s of ['24:00:00', '00:60:00', '5m', '1:2:3:4:5']) assert.equal(parseTimeSpan(s), undefined, s);
  });

  test('timer schedules from app settings: resolved when the settings are known, unset is refused', () => {
    const f = [timer('%SWEEP%')];
    assert.deepEqual(refusedBy(f), [], 'without settings a %NAME% schedule is not judged');
    assert.deepEqual(refusedBy(f, { SWEEP: '0 */5 * * * *' }), []);
    assert.deepEqual(messages(f, {}), ["'%SWEEP%' does not resolve to a value."]);
    assert.deepEqual(refusedBy(f, { SWEEP: 'every night' }), ['timer-schedule']);
  });

  test('Service Bus triggers: a queue, or a topic with its subscription; settings resolve', () => {
    assert.deepEqual(refusedBy([topic({ queueName: 'q' })]), []);
    assert.deepEqual(refusedBy([topic({})]), ['service-bus-entity']);
    assert.deepEqual(refusedBy([topic({ topicName: 't', subscriptionName: ' ' })]), ['service-bus-entity']);
    assert.deepEqual(refusedBy([topic({ queueName: 'q', topicName: 't', subscriptionName: 's' })]), [
      'service-bus-entity',
    ]);
    assert.deepEqual(messages([topic({ queueName: '%Q%' })], {}), ["'%Q%' does not resolve to a value."]);
  });
});

// ---------------------------------------------------------------------------------------------
// The app itself, and the local host
// ---------------------------------------------------------------------------------------------

const root = repoRoot();

interface Printed {
  functions: { name: string; bindings: { name: string; type: string; direction: string }[] }[];
}

describe("the app's own functions", () => {
  test('every function of the app passes every rule, with the settings each infra variant deploys', () => {
    const run = spawnSync(process.execPath, [join(root, 'dist/tools/devstack/host/print-registrations.js')], {
      cwd: root,
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(run.status, 0, run.stderr);
    const functions: RegisteredFunction[] = (JSON.parse(run.stdout) as Printed).functions.map((f) => ({
      name: f.name,
      bindings: Object.fromEntries(f.bindings.map((b) => [b.name, b])),
    }));
    assert.ok(functions.length >= 10, `${functions.length} functions captured`);
    for (const variant of VARIANTS) {
      assert.deepEqual(refusals(functions, appSettingsOf(variant)), [], variant);
    }
  });

  test('a function the host would refuse stops the local host before it serves, naming the function', () => {
    const dir = mkdtempSync(join(tmpdir(), 'pushdrain-refused-'));
    try {
      writeFileSync(join(dir, 'host.json'), JSON.stringify({ version: '2.0' }));
      writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'refused', main: 'app/*.js' }));
      const functionsLib = require.resolve('@azure/functions', { paths: [root] });
      const app = [
        `const { app } = require(${JSON.stringify(functionsLib)});`,
        `app.http('adminStatus', { route: 'admin/status', methods: ['GET'], handler: async () => ({ status: 200 }) });`,
      ].join('\n');
      mkdirSync(join(dir, 'app'));
      writeFileSync(join(dir, 'app', 'index.js'), app);
      const host = join(root, 'dist/tools/devstack/host/local-host.js');
      const script = [
        `require(${JSON.stringify(host)}).startLocalHost({ root: ${JSON.stringify(dir)}, port: 0 }).then(`,
        `  () => { console.log('SERVING'); process.exit(0); },`,
        `  (e) => { console.error('pushdrain failed to start: ' + e.message); process.exit(1); });`,
      ].join('\n');
      const run = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 30_000 });
      assert.equal(run.status, 1, run.stdout + run.stderr);
      assert.ok(!run.stdout.includes('SERVING'));
      assert.match(
        run.stderr,
        /The 'adminStatus' function is in error: The specified route conflicts with one or more built in routes\./,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
