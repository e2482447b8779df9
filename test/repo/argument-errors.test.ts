/**
 * A command line the tools do not take is a usage error, exit 2 with the usage on stderr, before
 * anything starts: `pushdrain` with no command, `npm start` with a mistyped or unknown flag.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { runHostToExit } from '../support/host-process';
import { runCli } from '../support/local-stack';

// Ports of their own: should the check let a command line through, the stack takes nobody's port.
const FREE_PORTS = { AZURITE_BLOB_PORT: '0', AZURITE_QUEUE_PORT: '0', SERVICEBUS_PORT: '0' };

describe('argument errors exit 2 with the usage', () => {
  test('pushdrain with no command', async () => {
    const r = await runCli([], {}, 30_000);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /^Usage: pushdrain \[options\] \[command\]/m);
    assert.match(r.stderr, /^ {2}submit \[options\] <file>/m);
    assert.equal(r.stdout, '');
  });

  test('pushdrain help, --help and --version still exit 0; a group with no subcommand is a usage error', async () => {
    for (const args of [['help'], ['help', 'submit'], ['--help'], ['--version']])
      assert.equal((await runCli(args, {}, 30_000)).code, 0, args.join(' '));
    assert.equal((await runCli(['webhooks'], {}, 30_000)).code, 2);
  });

  for (const args of [
    ['--instanses', '3'],
    ['--trace'],
    ['--secondary', 'extra'],
    ['--secondary=yes'],
    ['--auth', 'entar'],
    ['--auth'],
  ]) {
    test(`npm start -- ${args.join(' ')}`, async () => {
      const r = await runHostToExit(FREE_PORTS, 30_000, args);
      assert.equal(r.code, 2, r.output);
      assert.match(r.output, /^npm start: /);
      assert.match(r.output, /^Usage: npm start \[-- <options>\]/m);
      assert.match(r.output, /^ {2}--traces/m);
      assert.doesNotMatch(r.output, /pushdrain is running|Azurite/, 'nothing started');
    });
  }

  test('npm start -- --help prints the usage and exits 0', async () => {
    const r = await runHostToExit(FREE_PORTS, 30_000, ['--help']);
    assert.equal(r.code, 0, r.output);
    assert.match(r.output, /^Usage: npm start/);
  });
});
