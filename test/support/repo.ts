/** The repository as the tests see it: its root (found from dist/ by the local host's own rule) and its files. */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

import { findRepoRoot } from '../../tools/devstack/host/registry';

export const repoRoot = (): string => findRepoRoot(__dirname);

export const readRepoFile = (relPath: string): string => readFileSync(join(repoRoot(), relPath), 'utf8');

/**
 * Repo-relative paths (forward slashes) of the files git would commit: tracked, or new and not
 * ignored. Outside a git checkout: every file but dependencies and build output.
 */
export function repoFiles(): string[] {
  const root = repoRoot();
  const git = spawnSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: root,
    encoding: 'utf8',
  });
  if (git.status === 0)
    return git.stdout
      .split('\0')
      .filter((f) => f !== '' && existsSync(join(root, f)))
      .sort();
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
      if (!e.isDirectory()) return [relative(root, join(dir, e.name)).split('\\').join('/')];
      return /^(node_modules|dist|dist-.*|\.git|\.azurite)$/.test(e.name) ? [] : walk(join(dir, e.name));
    });
  return walk(root).sort();
}
