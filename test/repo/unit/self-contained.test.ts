/**
 * The repository explains itself: no file points at something outside it. A clone must be
 * readable on its own, so code, tests, docs and config may name only files that are in the repo
 * (docs/ARCHITECTURE.md holds the design contract). CHANGELOG.md is history and is left as written.
 */
import assert from 'node:assert/strict';
import { extname, posix } from 'node:path';
import { describe, test } from 'node:test';

import { readRepoFile, repoFiles } from '../../support/repo';

/** History is left as written; this file's own examples are the very references it forbids. */
const EXEMPT = new Set(['CHANGELOG.md', 'package-lock.json', 'test/repo/unit/self-contained.test.ts']);
const TEXT = new Set(['.ts', '.mjs', '.js', '.json', '.md', '.bicep', '.yml', '.yaml', '.txt', '']);

/** Machine paths (a workspace, a home directory) that exist on one computer, not in a clone. */
const MACHINE_PATH = /(?<![\w.:/@-])\/(?:work|home|Users|root|mnt|srv|opt|tmp|var)\/[\w.-]/;
/**
 * Documents that exist only beside the repo, never in it: the development broker's wire notes.
 * Their name is assembled here, so that this file does not itself point at them.
 */
const WIRE_NOTES = ['servicebus', 'wire'].join('-');
const OUTSIDE_DOC = new RegExp(`${WIRE_NOTES}(?:\\.md)?`);
/** Paths that exist on one machine beside the repo, for the examples below. */
const BESIDE = ['', 'shared', 'ARCHITECTURE.md'].join('/');

/** What in one file's text points outside the repo; `exists` says whether a repo-relative path is a file of the repo. */
function outsideReferences(file: string, text: string, exists: (path: string) => boolean): string[] {
  const found: string[] = [];
  const lines = text.split('\n');
  const dir = posix.dirname(file);
  lines.forEach((line, i) => {
    const at = `${file}:${i + 1}`;
    const machine = MACHINE_PATH.exec(line);
    if (machine) found.push(`${at} names a machine path: ${line.slice(machine.index, machine.index + 60).trim()}`);
    if (OUTSIDE_DOC.test(line))
      found.push(`${at} names ${WIRE_NOTES}.md, which is not in the repo (see tools/devstack/servicebus/README.md)`);
    // An import, or a path to a file (it has an extension), that climbs above the repository root.
    // Other ../ strings are data: the path-traversal attempts that the input tests send.
    for (const m of line.matchAll(/(?<![\w.])((?:\.\.\/)+)[\w.-]+(?:\/[\w.-]+)*/g)) {
      const reference = /\.\w+$/.test(m[0]) || /(?:from|import\(|require\()\s*['"]$/.test(line.slice(0, m.index));
      if (reference && posix.normalize(posix.join(dir, m[1]!)).startsWith('..'))
        found.push(`${at} climbs out of the repo: ${m[0]}`);
    }
    // A markdown document must be one of ours: beside the file, or from the root. URLs and <placeholders> aside.
    for (const m of line.matchAll(/(?<![\w./<-])((?:\.{1,2}\/)?[\w-]+(?:\/[\w.-]+)*\.md)\b/g)) {
      if (/[a-z]+:\/\/\S*$/i.test(line.slice(0, m.index))) continue;
      const ref = m[1]!;
      if (!exists(posix.normalize(posix.join(dir, ref))) && !exists(posix.normalize(ref)))
        found.push(`${at} names ${ref}, which is not in the repo`);
    }
  });
  return found;
}

describe('the repository is self-contained', () => {
  test("no tracked file points outside the repo (machine paths, the broker's wire notes, ../ above the root, missing .md files)", () => {
    const files = repoFiles();
    const all = new Set(files);
    assert.ok(all.has('docs/ARCHITECTURE.md') && all.has('README.md'), 'the file list holds the docs');
    const problems = files
      .filter((f) => !EXEMPT.has(f) && TEXT.has(extname(f)))
      .flatMap((f) => outsideReferences(f, readRepoFile(f), (p) => all.has(p)));
    assert.deepEqual(problems, []);
  });

  test('the check catches what it is for', () => {
    const exists = (p: string): boolean => ['docs/ARCHITECTURE.md', 'docs/DESIGN.md', 'README.md'].includes(p);
    const flagged = (file: string, text: string): number => outsideReferences(file, text, exists).length;
    assert.equal(flagged('test/x.test.ts', `readFileSync('/work${BESIDE}')`), 1, 'a machine path');
    assert.equal(
      flagged('shared/model/transaction.ts', ' * The transaction schema (ARCHITECTURE.md "Transaction (input)")'),
      1,
    );
    assert.equal(flagged('local/servicebus/broker.ts', ` * (see shared/${WIRE_NOTES}.md)`), 2);
    assert.equal(flagged('README.md', `see [the contract](..${BESIDE})`), 2);
    assert.equal(
      flagged('bench/results/latest.json', '"profileFile": "/home/ci/pushdrain/bench/results/x.cpuprofile"'),
      1,
    );
    // What is fine: our own docs, from the root or beside the file, imports inside the repo, URLs.
    assert.equal(flagged('shared/model/transaction.ts', ' * docs/ARCHITECTURE.md, "Transaction (input)"'), 0);
    assert.equal(flagged('docs/DESIGN.md', 'the contract is in [ARCHITECTURE.md](ARCHITECTURE.md); see README.md'), 0);
    assert.equal(flagged('shared/a/b.ts', "import { c } from '../../../outside/c';"), 1, 'an import above the root');
    assert.equal(flagged('test/support/x.ts', "import { a } from '../../shared/names';"), 0);
    assert.equal(
      flagged('test/x.test.ts', "getBatch('../../etc/passwd'); post('../../batches')"),
      0,
      'traversal attempts are test data',
    );
    assert.equal(
      flagged('docs/DEPLOY.md', 'https://github.com/Azure/azure-functions-host/blob/dev/README.md and <file.md>'),
      0,
    );
  });
});
