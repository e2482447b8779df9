// Runs one package.json script with its output captured (printed whole by the caller, never
// interleaved with another's), and its time.
import { spawn } from 'node:child_process';
import { setPriority } from 'node:os';

const npm = process.env.npm_execpath; // set when run from an npm script: the same npm, no PATH lookup

/**
 * `background`: at the lowest CPU priority (nice 19), so that it takes only what other work leaves
 * idle. Set on npm's process before it has loaded, so the script's own processes inherit it.
 * `signal`: aborting it kills the script's whole process group; it then resolves with code null.
 * @param {string} script
 * @param {{ background?: boolean, signal?: AbortSignal }} [options]
 * @returns {Promise<{script: string, code: number | null, output: string, ms: number}>}
 */
export function runNpmScript(script, options = {}) {
  const started = Date.now();
  return new Promise((resolve) => {
    // Its own process group (detached), so that an abort reaches eslint or prettier under npm and sh.
    const how = { stdio: ['ignore', 'pipe', 'pipe'], detached: process.platform !== 'win32' };
    const child = npm
      ? spawn(process.execPath, [npm, 'run', '--silent', script], how)
      : spawn('npm', ['run', '--silent', script], how);
    const abort = () => {
      try {
        if (how.detached && child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
        else child.kill('SIGKILL');
      } catch {
        // already gone
      }
    };
    if (options.signal?.aborted) abort();
    else options.signal?.addEventListener('abort', abort, { once: true });
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
    child.once('close', (code) => {
      options.signal?.removeEventListener('abort', abort);
      resolve({ script, code, output, ms: Date.now() - started });
    });
  });
}

/** One line: the script, ok or how it failed, and its time. */
export function verdict(r) {
  return `checks: ${r.script} ${r.code === 0 ? 'ok' : `FAILED (exit ${r.code})`}, ${(r.ms / 1000).toFixed(1)} s`;
}
