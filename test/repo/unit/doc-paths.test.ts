/**
 * Docs name only paths that exist. Every path under one of the repository's own folders that a
 * Markdown document names (CHANGELOG.md aside: history is left as written), or that a comment in
 * the code names, is a file or folder of the repo; a module may be named without its extension,
 * and a compiled one by its .js name. What git ignores (build output, profiles a run writes) may
 * be named though absent.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { extname } from 'node:path';
import { describe, test } from 'node:test';

import { readRepoFile, repoFiles, repoRoot } from '../../support/repo';

/** The repository's own top-level folders: a path that starts with one names something of ours. */
const TOP = ['functions', 'shared', 'infra', 'test', 'tools', 'scripts', 'docs', 'static', '.ci', '.github'];
const PATH = new RegExp(
  `(?<![\\w./{}<>$@-])((?:${TOP.map((t) => t.replace('.', '\\.')).join('|')})/[\\w./@-]*[\\w-])`,
  'g',
);
const CODE = new Set(['.ts', '.mjs', '.js']);
/** A comment line: what a path in code names for a reader rather than for the program. */
const COMMENT = /^\s*(\/\/|\/?\*)/;

/** The paths a text names that are not in the repo; `exists` says whether a repo path is a file or folder of it. */
export function missingPaths(file: string, text: string, exists: (path: string) => boolean): string[] {
  const code = CODE.has(extname(file));
  const found: string[] = [];
  text.split('\n').forEach((line, i) => {
    if (code && !COMMENT.test(line)) return;
    for (const m of line.matchAll(PATH)) {
      const path = m[1]!;
      // A pattern or a placeholder (`work-{p}`, `results/<batch>`, `tools/*.ts`) names no one file.
      const next = line[m.index + m[0].length];
      if (next !== undefined && '*{<'.includes(next)) continue;
      const candidates = [path, `${path}.ts`, `${path}.mjs`, path.replace(/\.js$/, '.ts')];
      if (!candidates.some(exists)) found.push(`${file}:${i + 1} names ${path}, which is not in the repo`);
    }
  });
  return found;
}

/** Whether git ignores a path (output a build or a run writes, never committed). */
const ignored = (path: string): boolean =>
  spawnSync('git', ['check-ignore', '-q', '--no-index', path], { cwd: repoRoot() }).status === 0;

describe('docs name only paths that exist', () => {
  test('every repository path in a Markdown document or a code comment is in the repo', () => {
    const files = repoFiles();
    const all = new Set(files);
    const folders = new Set(
      files.flatMap((f) =>
        f
          .split('/')
          .slice(0, -1)
          .map((_, i, a) => a.slice(0, i + 1).join('/')),
      ),
    );
    const exists = (p: string): boolean => all.has(p) || folders.has(p.replace(/\/$/, ''));
    const problems = files
      .filter((f) => f !== 'CHANGELOG.md' && (f.endsWith('.md') || CODE.has(extname(f))))
      .flatMap((f) => missingPaths(f, readRepoFile(f), exists))
      .filter((problem) => !ignored(/ names (\S+),/.exec(problem)![1]!));
    assert.deepEqual(problems, []);
  });

  test('the check catches what it is for', () => {
    const exists = (p: string): boolean => ['docs/DESIGN.md', 'shared/app.ts', 'test/support'].includes(p);
    const flagged = (file: string, text: string): number => missingPaths(file, text, exists).length;
    assert.equal(flagged('README.md', 'see `test/security.test.ts`'), 1, 'a file that was split');
    assert.equal(flagged('docs/DESIGN.md', 'in [the app](../shared/app.ts) and shared/gone.ts'), 1);
    assert.equal(flagged('shared/x.ts', ' * the façade (shared/app) and test/support/'), 0, 'a module, a folder');
    assert.equal(flagged('shared/x.ts', '// as dist/shared/app.js runs it: shared/app.js'), 0, 'a compiled name');
    assert.equal(flagged('shared/x.ts', ' * moved to shared/elsewhere.ts'), 1, 'a comment in code');
    assert.equal(flagged('test/x.test.ts', "check('functions/x.ts');"), 0, 'a string in code is data');
    assert.equal(flagged('docs/DESIGN.md', 'queues `work-{p}`, files tools/*.ts, blobs results/<batch>'), 0);
  });
});
