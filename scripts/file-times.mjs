// A node:test reporter beside TAP: each test file's time, longest first, so the slowest files are
// the ones to look at. Written to the destination run-tests.mjs gives it (dist/test-times.txt).
// Two figures per file: its process from start to exit (what a lane of the runner is held for), and
// the sum of its top-level tests and suites, hooks included. A process that outlives its tests by
// seconds has a timer or a handle left open: the runner waits for it to exit on its own. And when
// each process ended, from the suite's start: what ran beside what, and how many lanes ran at the end.
export default async function* fileTimes(source) {
  const started = Date.now();
  const tests = new Map();
  const processes = new Map();
  const ended = new Map();
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail' && event.type !== 'test:complete') continue;
    const { file, nesting, details, name } = event.data;
    if (nesting !== 0 || !file) continue;
    const ms = details?.duration_ms ?? 0;
    // The runner reports each file's process as a test named after the file.
    if (event.type === 'test:complete' && file.endsWith(name)) {
      processes.set(file, ms);
      ended.set(file, Date.now() - started);
    } else if (event.type !== 'test:complete') tests.set(file, (tests.get(file) ?? 0) + ms);
  }
  const files = [...new Set([...processes.keys(), ...tests.keys()])];
  const rows = files
    .map((f) => ({
      file: f,
      process: processes.get(f) ?? tests.get(f) ?? 0,
      tests: tests.get(f) ?? 0,
      ended: ended.get(f) ?? 0,
    }))
    .sort((a, b) => b.process - a.process);
  const sum = (k) => rows.reduce((t, r) => t + r[k], 0);
  const s = (ms) => (ms / 1000).toFixed(1).padStart(7);
  const cwd = process.cwd() + '/';
  yield `# time by test file (s; files run four at a time, so these add up to more than the wall time)\n`;
  yield `# process: start to exit; tests: its top-level tests and suites; ended: when its process ended, from the suite's start\n`;
  yield `${'process'.padStart(7)}  ${'tests'.padStart(7)}  ${'ended'.padStart(7)}  file\n`;
  for (const r of rows) yield `${s(r.process)}  ${s(r.tests)}  ${s(r.ended)}  ${r.file.replace(cwd, '')}\n`;
  yield `${s(sum('process'))}  ${s(sum('tests'))}  ${' '.repeat(7)}  (sum over ${rows.length} files)\n`;
}
