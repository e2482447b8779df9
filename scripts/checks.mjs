// Runs package.json scripts side by side and fails if any fails: `npm test`'s compile, lint,
// format and OpenAPI checks. Each is one single-threaded process, and run one after another they
// left a core idle for most of a minute before the first test started. Each script's output is
// printed whole when it ends (not interleaved), with its time.
import { spawn } from 'node:child_process';

const scripts = process.argv.slice(2);
if (scripts.length === 0) {
  console.error('usage: node scripts/checks.mjs <npm script> [<npm script> ...]');
  process.exit(2);
}
const npm = process.env.npm_execpath; // set when run from an npm script: the same npm, no PATH lookup

function run(script) {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = npm
      ? spawn(process.execPath, [npm, 'run', '--silent', script], { stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn('npm', ['run', '--silent', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.once('error', (e) =>
      resolve({ script, code: 1, output: `${output}${e.message}\n`, ms: Date.now() - started }),
    );
    child.once('close', (code) => resolve({ script, code, output, ms: Date.now() - started }));
  });
}

const results = await Promise.all(
  scripts.map((s) =>
    run(s).then((r) => {
      const verdict = r.code === 0 ? 'ok' : `FAILED (exit ${r.code})`;
      process.stdout.write(
        `${r.output.trimEnd() ? `${r.output.trimEnd()}\n` : ''}checks: ${s} ${verdict}, ${(r.ms / 1000).toFixed(1)} s\n`,
      );
      return r;
    }),
  ),
);
const failed = results.filter((r) => r.code !== 0).map((r) => r.script);
if (failed.length > 0) {
  console.error(`checks: failed: ${failed.join(', ')}`);
  process.exit(1);
}
