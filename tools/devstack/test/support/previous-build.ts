/**
 * The commit before this one (`HEAD~1`, the previous main commit once merged), built to run beside
 * this tree: its files from `git archive` (nothing in this repo's .git changes), this tree's
 * node_modules linked in when the previous commit's package.json and package-lock.json are the same
 * as this tree's (an install would make the same tree; a test must not reach the registry), and its
 * TypeScript transpiled file by file into its own dist/ (no type check: that commit was checked
 * when it was made). When the dependencies differ, or git has no previous commit (a shallow clone),
 * the caller gets a reason to skip instead of a build.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

import ts from 'typescript';

export type PreviousBuild = { dir: string; commit: string; ms: number } | { skip: string };

/** The sources `npm start` may load: the app and the tools (their tests are left out). */
const SOURCES = ['functions', 'shared', 'tools'];
const SKIPPED_DIRS = new Set(['test', 'node_modules']);

function git(cwd: string, args: string[], input?: Buffer): { status: number | null; stdout: Buffer; stderr: string } {
  const r = spawnSync('git', args, { cwd, input, maxBuffer: 256 * 1024 * 1024, timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr?.toString() ?? '' };
}

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      if (!SKIPPED_DIRS.has(e.name)) out.push(...tsFiles(p));
    } else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** Builds `rev` (default HEAD~1) of the repo at `root` into `into`. */
export function buildPrevious(root: string, into: string, rev = 'HEAD~1'): PreviousBuild {
  const started = Date.now();
  const sha = git(root, ['rev-parse', '--verify', '--quiet', `${rev}^{commit}`]);
  if (sha.status !== 0) return { skip: `no ${rev} in this clone (a shallow checkout? CI fetches with fetch-depth: 2)` };
  const commit = sha.stdout.toString().trim();
  for (const f of ['package.json', 'package-lock.json']) {
    const same = git(root, ['diff', '--quiet', commit, '--', f]);
    if (same.status !== 0)
      return {
        skip: `${f} differs between ${commit.slice(0, 12)} and this tree: its node_modules cannot be this tree's, and the test installs nothing`,
      };
  }
  const archive = git(root, ['archive', '--format=tar', commit]);
  if (archive.status !== 0) throw new Error(`git archive ${commit}: ${archive.stderr}`);
  mkdirSync(into, { recursive: true });
  const untar = spawnSync('tar', ['-x', '-C', into], { input: archive.stdout, timeout: 60_000 });
  if (untar.status !== 0) throw new Error(`tar: ${untar.stderr?.toString() ?? ''}`);
  symlinkSync(join(root, 'node_modules'), join(into, 'node_modules'), 'dir');
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.CommonJS,
    esModuleInterop: true,
    sourceMap: false,
  };
  for (const top of SOURCES) {
    for (const file of tsFiles(join(into, top))) {
      const out = ts.transpileModule(readFileSync(file, 'utf8'), { compilerOptions: options, fileName: file });
      const target = join(into, 'dist', relative(into, file)).replace(/\.ts$/, '.js');
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, out.outputText);
    }
  }
  return { dir: into, commit, ms: Date.now() - started };
}
