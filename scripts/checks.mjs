// Runs package.json scripts side by side and fails if any fails. Each script's output is printed
// whole when it ends (not interleaved), with its time. `npm test` runs its lint, format and OpenAPI
// checks beside the suite instead (run-tests.mjs --beside); this is for running them alone.
import { runNpmScript, verdict } from './npm-script.mjs';

const scripts = process.argv.slice(2);
if (scripts.length === 0) {
  console.error('usage: node scripts/checks.mjs <npm script> [<npm script> ...]');
  process.exit(2);
}

const results = await Promise.all(
  scripts.map((s) =>
    runNpmScript(s).then((r) => {
      process.stdout.write(`${r.output.trimEnd() ? `${r.output.trimEnd()}\n` : ''}${verdict(r)}\n`);
      return r;
    }),
  ),
);
const failed = results.filter((r) => r.code !== 0).map((r) => r.script);
if (failed.length > 0) {
  console.error(`checks: failed: ${failed.join(', ')}`);
  process.exit(1);
}
