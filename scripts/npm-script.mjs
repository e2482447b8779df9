// Runs one package.json script with its output captured (printed whole by the caller, never
// interleaved with another's), and its time.
import { spawn } from 'node:child_process';
import { setPriority } from 'node:os';

const npm = process.env.npm_execpath; // set when run from an npm script: the same npm, no PATH lookup

/**
 * `background`: at the lowest CPU priority (nice 19), so that it takes only what other work leaves
 * idle. Set on npm's process before it has loaded, so the script's own processes inherit it.
 * @param {string} script
 * @param {{ background?: boolean }} [options]
 * @returns {Promise<{script: string, code: number | null, output: string, ms: number}>}
 */
export function runNpmScript(script, options = {}) {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = npm
      ? spawn(process.execPath, [npm, 'run', '--silent', script], { stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn('npm', ['run', '--silent', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    if (options.background && child.pid !== undefined) {
      try {
        setPriority(child.pid, 19);
      } catch {
        // not permitted here: it runs at normal priority, only slower for the work beside it
      }
    }
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.once('error', (e) =>
      resolve({ script, code: 1, output: `${output}${e.message}\n`, ms: Date.now() - started }),
    );
    child.once('close', (code) => resolve({ script, code, output, ms: Date.now() - started }));
  });
}

/** One line: the script, ok or how it failed, and its time. */
export function verdict(r) {
  return `checks: ${r.script} ${r.code === 0 ? 'ok' : `FAILED (exit ${r.code})`}, ${(r.ms / 1000).toFixed(1)} s`;
}
