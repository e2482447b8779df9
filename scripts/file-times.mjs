// A node:test reporter beside TAP: each test file's time (the sum of its top-level tests and
// suites, hooks included), longest first, so the slowest files are the ones to look at. Written to
// the destination run-tests.mjs gives it (dist/test-times.txt).
export default async function* fileTimes(source) {
  const byFile = new Map();
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { file, nesting, details } = event.data;
    if (nesting !== 0 || !file) continue;
    byFile.set(file, (byFile.get(file) ?? 0) + (details?.duration_ms ?? 0));
  }
  const rows = [...byFile.entries()].sort((a, b) => b[1] - a[1]);
  const total = rows.reduce((t, [, ms]) => t + ms, 0);
  const cwd = process.cwd() + '/';
  yield `# test time by file (s; files run three at a time, so these add up to more than the wall time)\n`;
  for (const [file, ms] of rows) yield `${(ms / 1000).toFixed(1).padStart(7)}  ${file.replace(cwd, '')}\n`;
  yield `${(total / 1000).toFixed(1).padStart(7)}  (sum over ${rows.length} files)\n`;
}
