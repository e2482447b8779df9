/**
 * The unit lane is a folder: a test file is in it exactly when it sits in a folder named `unit` under
 * its `test` folder (test/support/unit-lane.ts), for the .ts source and the compiled .js alike. The
 * guard then refuses sockets, servers and child processes in such a file, and leaves any other file
 * alone: run through the same preload the runner uses.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, test } from 'node:test';

import { scratchDir } from '../support/scratch-dir';
import { inUnitLane } from '../support/unit-lane';

const guard = join(__dirname, '..', 'support', 'unit-lane.js');

describe('the lane is decided by the path', () => {
  test('a folder named unit under the test folder, in the source and under dist/, in the app and in a tool', () => {
    for (const path of [
      'test/ingest/unit/body-validation.test.ts',
      'dist/test/ingest/unit/body-validation.test.js',
      resolve('pushdrain', 'dist', 'test', 'repo', 'unit', 'doc-paths.test.js'),
      'tools/devstack/test/unit/self-signed-cert.test.ts',
      'dist/tools/cli/test/unit/poll-schedule.test.js',
      'C:\\pushdrain\\dist\\test\\drain\\unit\\backoff.test.js',
    ])
      assert.equal(inUnitLane(path), true, path);
  });

  test('not outside one: an area folder, a file named unit, a unit folder above the checkout, no test folder', () => {
    for (const path of [
      'test/ingest/ingest-http.test.ts',
      'dist/test/repo/unit-lane.test.js',
      'tools/devstack/test/packaging.test.ts',
      'test/ingest/unit.test.ts',
      '/builds/unit/pushdrain/dist/test/ingest/ingest-http.test.js',
      '/builds/unit/x.js',
    ])
      assert.equal(inUnitLane(path), false, path);
  });
});

function runFile(inLane: boolean, body: string): { status: number | null; output: string } {
  const dir = join(scratchDir('unit-lane'), 'test', 'area', ...(inLane ? ['unit'] : []));
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${Math.random().toString(36).slice(2)}.test.js`);
  writeFileSync(file, `${body}\n`);
  const r = spawnSync(process.execPath, ['--require', guard, file], { encoding: 'utf8', timeout: 30_000 });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

const cases = {
  'a connection': `require('node:net').connect(1, '127.0.0.1').on('error', () => {});`,
  'a server': `require('node:http').createServer().listen(0, '127.0.0.1', function () { this.close(); });`,
  'a child process': `require('node:child_process').spawnSync(process.execPath, ['-e', '0']);`,
};

for (const [what, body] of Object.entries(cases)) {
  test(`a file in a unit/ folder that opens ${what} fails with the lane's reason; one outside may`, () => {
    const inLane = runFile(true, body);
    assert.notEqual(inLane.status, 0, inLane.output);
    assert.match(inLane.output, /unit lane: this file is in a unit\/ folder/);
    const outside = runFile(false, body);
    assert.equal(outside.status, 0, outside.output);
  });
}

test('git stays allowed in the unit lane (the repo-reading tests list files with it)', () => {
  const r = runFile(
    true,
    `const r = require('node:child_process').spawnSync('git', ['--version']); process.exit(r.error ? 1 : 0);`,
  );
  assert.equal(r.status, 0, r.output);
});
