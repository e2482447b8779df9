/**
 * The files a deployment tool uploads from a project folder, given its .funcignore. The two tools
 * that read .funcignore match it differently, so both are reproduced:
 * - azd (`createDeployableZip`) matches with a gitignore library (git's semantics), and also leaves
 *   out the ignore file itself, `.azure/` folders and `local.settings.json`. Git itself does the
 *   matching here: `git ls-files --others --exclude-from=.funcignore`, without the standard
 *   excludes, so that no .gitignore takes part.
 * - Core Tools (`func azure functionapp publish`) walks every file and tests its path with
 *   GitIgnoreParser, its C# port of codemix/gitignore-parser: each pattern becomes an ECMAScript
 *   regex anchored at the start of the path, `*` never crosses a `/`, and any `!` pattern wins.
 *   `*.ts` therefore only matches files at the root. Ported below line for line (JavaScript regexes
 *   are ECMAScript, as the port asks); the walk leaves out `.git/`, `.vscode/` and files named
 *   .funcignore, .gitignore, local.settings.json and project.lock.json.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

function git(cwd: string, args: string[], input?: string): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync('git', args, {
    cwd,
    encoding: 'utf8',
    input,
    timeout: 30_000,
    env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' },
  });
  if (r.error) throw r.error;
  return r;
}

/** Files under `root` (forward slashes, relative), optionally skipping directories by name. */
export function walk(root: string, skipDirs: readonly string[] = []): string[] {
  const skip = new Set(skipDirs.map((d) => d.toLowerCase()));
  const out: string[] = [];
  const visit = (dir: string, prefix: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) {
        if (!skip.has(e.name.toLowerCase())) visit(join(dir, e.name), `${prefix}${e.name}/`);
      } else out.push(`${prefix}${e.name}`);
    }
  };
  visit(root, '');
  return out.sort();
}

/** What azd zips from `root` (which must not be a git repository itself). */
export function uploadedByAzd(root: string): string[] {
  const scratch = mkdtempSync(join(tmpdir(), 'pushdrain-gitdir-'));
  try {
    const gitDir = join(scratch, 'git');
    const init = git(scratch, ['init', '-q', '--bare', gitDir]);
    if (init.status !== 0) throw new Error(`git init: ${init.stderr}`);
    const ls = git(root, [
      `--git-dir=${gitDir}`,
      `--work-tree=${root}`,
      'ls-files',
      '--others',
      '-z',
      '--exclude-from=.funcignore',
    ]);
    if (ls.status !== 0) throw new Error(`git ls-files: ${ls.stderr}`);
    return ls.stdout
      .split('\0')
      .filter((p) => p !== '')
      .filter((p) => {
        const parts = p.split('/');
        const name = parts[parts.length - 1]!;
        return name !== '.funcignore' && name !== 'local.settings.json' && !parts.slice(0, -1).includes('.azure');
      })
      .sort();
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** Whether git's semantics ignore `path` under these patterns (the path need not exist). */
export function gitIgnores(patterns: string, path: string): boolean {
  const scratch = mkdtempSync(join(tmpdir(), 'pushdrain-check-ignore-'));
  try {
    const init = git(scratch, ['init', '-q']);
    if (init.status !== 0) throw new Error(`git init: ${init.stderr}`);
    const file = join(scratch, 'patterns');
    writeFileSync(file, patterns);
    const r = git(scratch, ['-c', `core.excludesFile=${file}`, 'check-ignore', '--no-index', '-q', '--stdin'], path);
    if (r.status !== 0 && r.status !== 1) throw new Error(`git check-ignore: ${r.stderr}`);
    return r.status === 0;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * Core Tools' GitIgnoreParser (codemix/gitignore-parser semantics). Kept as a port, not a package:
 * npm's `ignore` follows git (azd's side, which git itself answers above), and `gitignore-parser`
 * 0.0.2 on npm predates the `\b` after each pattern and the replace-every-`*` that the C# port has,
 * so either would model a matcher Core Tools does not run (`benches/` would be ignored by `bench`).
 */
export class CoreToolsIgnore {
  private readonly positive: RegExp;
  private readonly negative: RegExp;

  constructor(content: string) {
    const lists: [string[], string[]] = [[], []];
    for (const raw of content.split('\n')) {
      let line = raw.trim();
      if (line.startsWith('#') || line === '') continue;
      const isNegative = line.startsWith('!');
      if (isNegative) line = line.slice(1);
      if (line.startsWith('/')) line = line.slice(1);
      lists[isNegative ? 1 : 0].push(line);
    }
    const compile = (patterns: string[]): RegExp => {
      // The port sorts the patterns first; in an alternation the order cannot change the answer.
      const sorted = [...patterns].sort().map(prepareRegexPattern);
      return sorted.length > 0 ? new RegExp(`^((${sorted.join(')|(')}))\\b`) : /$^/;
    };
    this.positive = compile(lists[0]);
    this.negative = compile(lists[1]);
  }

  accepts(input: string): boolean {
    const path = input === '/' ? '' : input;
    return this.negative.test(path) || !this.positive.test(path);
  }
}

function prepareRegexPattern(pattern: string): string {
  return pattern
    .replace(/[-[\]/{}()+?.\\^$|]/g, '\\$&')
    .replaceAll('**', '(.+)')
    .replaceAll('*', '([^\\/]+)');
}

/** What Core Tools zips from `root`. */
export function uploadedByCoreTools(root: string): string[] {
  const ignoredFiles = new Set(['.funcignore', '.gitignore', 'local.settings.json', 'project.lock.json']);
  let parser: CoreToolsIgnore | undefined;
  try {
    parser = new CoreToolsIgnore(readFileSync(join(root, '.funcignore'), 'utf8'));
  } catch {
    parser = undefined;
  }
  return walk(root, ['.git', '.vscode'])
    .filter((p) => !ignoredFiles.has(p.split('/').pop()!.toLowerCase()))
    .filter((p) => parser?.accepts(p) ?? true);
}
