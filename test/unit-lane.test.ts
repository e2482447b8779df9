/**
 * The unit lane's guard (test/support/unit-lane.ts) refuses sockets, servers and child processes in a
 * marked file, and leaves an unmarked file alone: run through the same preload the runner uses.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { scratchDir } from './support/scratch-dir';
import { UNIT_LANE_MARK } from './support/unit-lane';

const guard = join(__dirname, 'support', 'unit-lane.js');

function runFile(marked: boolean, body: string): { status: number | null; output: string } {
  const file = join(
    scratchDir('unit-lane'),
    `${marked ? 'marked' : 'unmarked'}-${Math.random().toString(36).slice(2)}.js`,
  );
  writeFileSync(file, `${marked ? `${UNIT_LANE_MARK}\n` : ''}${body}\n`);
  const r = spawnSync(process.execPath, ['--require', guard, file], { encoding: 'utf8', timeout: 30_000 });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

const cases = {
  'a connection': `require('node:net').connect(1, '127.0.0.1').on('error', () => {});`,
  'a server': `require('node:http').createServer().listen(0, '127.0.0.1', function () { this.close(); });`,
  'a child process': `require('node:child_process').spawnSync(process.execPath, ['-e', '0']);`,
};

for (const [what, body] of Object.entries(cases)) {
  test(`a unit-lane file that opens ${what} fails with the lane's reason; an unmarked one may`, () => {
    const marked = runFile(true, body);
    assert.notEqual(marked.status, 0, marked.output);
    assert.match(marked.output, /unit lane: this file is marked/);
    const unmarked = runFile(false, body);
    assert.equal(unmarked.status, 0, unmarked.output);
  });
}

test('git stays allowed in the unit lane (the repo-reading tests list files with it)', () => {
  const r = runFile(
    true,
    `const r = require('node:child_process').spawnSync('git', ['--version']); process.exit(r.error ? 1 : 0);`,
  );
  assert.equal(r.status, 0, r.output);
});
