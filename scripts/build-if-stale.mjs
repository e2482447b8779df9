// `npm start`'s build step: runs tsc only when a source is newer than the last successful build,
// so a second start with nothing changed skips the compiler (tsc itself is incremental, via
// dist/.tsbuildinfo, when it does run). `npm run build` always compiles; `npm run clean` resets.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const STAMP = join('dist', '.build-stamp');
// What tsconfig.json includes, and the files that change what tsc produces.
const SOURCES = ['functions', 'shared', 'local', 'cli', 'test', 'testkit', 'bench'];
const CONFIG = ['tsconfig.json', 'package.json', 'package-lock.json'];

function newest(dir) {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      if (e.name !== 'node_modules' && e.name !== 'results') t = Math.max(t, newest(p));
    } else if (e.name.endsWith('.ts')) t = Math.max(t, statSync(p).mtimeMs);
  }
  return t;
}

const started = Date.now();
const built = existsSync(STAMP) ? statSync(STAMP).mtimeMs : 0;
const latest = Math.max(
  ...SOURCES.filter((d) => existsSync(d)).map(newest),
  ...CONFIG.filter((f) => existsSync(f)).map((f) => statSync(f).mtimeMs),
);
if (built > 0 && latest < built) {
  console.log(
    `build: dist/ is up to date (no source changed since the last build), tsc skipped (${Date.now() - started} ms)`,
  );
  process.exit(0);
}
const r = spawnSync(process.execPath, [join('node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], {
  stdio: 'inherit',
});
if (r.status !== 0) process.exit(r.status ?? 1);
// Stamped with the time the build began: a file saved while tsc ran is newer, so the next start compiles it.
writeFileSync(STAMP, '');
utimesSync(STAMP, new Date(started), new Date(started));
console.log(`build: tsc ${Date.now() - started} ms`);
