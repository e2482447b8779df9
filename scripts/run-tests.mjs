// Runs every compiled *.test.js under dist/test (the app's tests) and dist/tools (each tool's own
// tests) with Node's built-in runner.
// Explicit file list: Node 20 would otherwise treat support modules in test/ as test files.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

function find(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return find(p);
    return e.name.endsWith('.test.js') ? [p] : [];
  });
}

const only = process.argv.slice(2);
const files = ['dist/test', 'dist/tools']
  .filter((d) => existsSync(d))
  .flatMap(find)
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .sort();
if (files.length === 0) {
  console.error('run-tests: no test files found under dist/test or dist/tools');
  process.exit(1);
}
const r = spawnSync(process.execPath, ['--test', '--test-concurrency=2', ...files], { stdio: 'inherit' });
process.exit(r.status ?? 1);
