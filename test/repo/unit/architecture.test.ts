/**
 * Guardrails in tooling: the app (functions/, shared/) never imports tooling (tools/, test/),
 * shared/ never reaches up into functions/ or @azure/functions, and no module imports itself
 * through a cycle. Reads the TypeScript sources as text.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix, relative, resolve, sep } from 'node:path';
import { describe, test } from 'node:test';

function repoRoot(): string {
  let dir = __dirname;
  while (!existsSync(join(dir, 'package.json'))) dir = dirname(dir);
  return dir;
}

const ROOT = repoRoot();
const SOURCE_DIRS = ['functions', 'shared', 'tools'];

function sources(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

/** Module specifiers of static imports, re-exports and dynamic imports. */
export function importsOf(text: string): string[] {
  const out: string[] = [];
  const re =
    /(?:^|\n)\s*(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|require\(\s*['"]([^'"]+)['"]\s*\)/g;
  for (let m = re.exec(text); m; m = re.exec(text)) out.push((m[1] ?? m[2] ?? m[3]) as string);
  return out;
}

function resolveLocal(from: string, spec: string): string | undefined {
  if (!spec.startsWith('.')) return undefined;
  const base = resolve(dirname(from), spec);
  for (const candidate of [`${base}.ts`, join(base, 'index.ts')]) if (existsSync(candidate)) return candidate;
  return undefined;
}

function graph(): Map<string, string[]> {
  const g = new Map<string, string[]>();
  for (const file of SOURCE_DIRS.flatMap((d) => sources(join(ROOT, d)))) {
    const deps = importsOf(readFileSync(file, 'utf8'))
      .map((s) => resolveLocal(file, s))
      .filter((x): x is string => x !== undefined);
    g.set(file, deps);
  }
  return g;
}

export function findCycle(g: Map<string, string[]>): string[] | undefined {
  const state = new Map<string, 'visiting' | 'done'>();
  const stack: string[] = [];
  const visit = (n: string): string[] | undefined => {
    state.set(n, 'visiting');
    stack.push(n);
    for (const d of g.get(n) ?? []) {
      if (state.get(d) === 'visiting') return [...stack.slice(stack.indexOf(d)), d];
      if (!state.has(d)) {
        const c = visit(d);
        if (c) return c;
      }
    }
    stack.pop();
    state.set(n, 'done');
    return undefined;
  };
  for (const n of g.keys()) {
    if (!state.has(n)) {
      const c = visit(n);
      if (c) return c;
    }
  }
  return undefined;
}

/** Azure SDK packages whose clients and types only adapters may touch. */
const SDK = /^@azure\/(storage-blob|storage-queue|service-bus|identity|core-[a-z-]+|arm-[a-z-]+)(\/|$)/;
/**
 * The adapters behind the ports, and the composition root that picks them. The scaling agent's
 * management adapter is one file, not its folder: the agent's rules, state and decisions in
 * shared/scale/ stay SDK-free, and only this file may load @azure/arm-appservice (45 MB, ~0.4 s),
 * which that file requires itself, lazily, on the first apply.
 */
const SDK_ALLOWED = [
  'shared/storage/',
  'shared/queue/',
  'shared/notify/',
  'shared/create-app.ts',
  'shared/compose/',
  'shared/scale/arm-target.ts',
];

/** Files of shared/ that import an Azure SDK package without being an adapter or the composition root. */
export function sdkOffenders(files: readonly { path: string; text: string }[]): string[] {
  return files
    .filter((f) => !SDK_ALLOWED.some((a) => f.path.startsWith(a)))
    .flatMap((f) =>
      importsOf(f.text)
        .filter((spec) => SDK.test(spec))
        .map((spec) => `${f.path} → ${spec}`),
    );
}

/** Packages only the operator CLI (or the tests) use: the Function App must never load them. */
const CLI_ONLY = /^(commander|cli-progress|playwright-core)(\/|$)/;

/**
 * Imports that would tie the app to the CLI, or the CLI to the app at run time: the app never
 * imports tools/cli/ or a CLI-only package; the CLI imports the app's modules for their types only
 * (erased at compile time), so dist/tools/cli needs nothing but Node and its two packages.
 */
export function cliOffenders(files: readonly { path: string; text: string }[]): string[] {
  const out: string[] = [];
  for (const f of files) {
    if (f.path.startsWith('tools/cli/')) {
      const valueImports = f.text.match(/^import\s+(?!type\s)[^;]*?from\s+'((?:\.\.\/)+[^']+)'/gm) ?? [];
      for (const line of valueImports)
        if (/'(?:\.\.\/)+(shared|functions|tools\/devstack)\//.test(line)) out.push(`${f.path} → ${line}`);
    } else {
      for (const spec of importsOf(f.text))
        if (CLI_ONLY.test(spec) || /(^|\/)tools\/cli\//.test(spec)) out.push(`${f.path} → ${spec}`);
    }
  }
  return out;
}

/** The app: what Azure loads. Everything else (tools/, test/) is tooling and never ships. */
const APP_DIRS = ['functions', 'shared'];

/**
 * Imports that would pull tooling into the app: a module of functions/ or shared/ whose relative
 * import leaves the app's folders (into tools/, test/ or elsewhere). The deploy package holds
 * only the app, so such an import would fail in Azure, and the tooling's packages would leak
 * into production dependencies. Tooling may import the app; the other way round, never.
 */
export function toolingOffenders(files: readonly { path: string; text: string }[]): string[] {
  return files.flatMap((f) =>
    importsOf(f.text)
      .filter((spec) => spec.startsWith('.'))
      .filter((spec) => {
        const target = posix.normalize(posix.join(posix.dirname(f.path), spec));
        return !APP_DIRS.some((d) => target.startsWith(`${d}/`));
      })
      .map((spec) => `${f.path} → ${spec}`),
  );
}

describe('architecture', () => {
  test('the app (functions/, shared/) never imports tooling (tools/, test/)', () => {
    const files = APP_DIRS.flatMap((d) => sources(join(ROOT, d))).map((f) => ({
      path: relative(ROOT, f).split(sep).join('/'),
      text: readFileSync(f, 'utf8'),
    }));
    assert.ok(
      files.some((f) => f.path.startsWith('functions/')) && files.some((f) => f.path.startsWith('shared/')),
      'read the sources',
    );
    assert.deepEqual(toolingOffenders(files), []);
    // The check can fail: one step up from functions/ into tools/, two from shared/ into test/.
    const up = '..';
    assert.deepEqual(
      toolingOffenders([
        { path: 'functions/x.ts', text: `import { startAzurite } from '${up}/tools/devstack/azurite';` },
      ]),
      [`functions/x.ts → ${up}/tools/devstack/azurite`],
    );
    assert.deepEqual(
      toolingOffenders([{ path: 'shared/a/b.ts', text: `import { poll } from '${up}/${up}/test/support/poll';` }]),
      [`shared/a/b.ts → ${up}/${up}/test/support/poll`],
    );
    assert.deepEqual(
      toolingOffenders([
        { path: 'functions/x.ts', text: "import { createApp } from '../shared/create-app';\nimport { a } from './y';" },
      ]),
      [],
    );
  });

  test('shared/ never imports @azure/functions, functions/ or tools/', () => {
    const offenders: string[] = [];
    for (const file of sources(join(ROOT, 'shared'))) {
      for (const spec of importsOf(readFileSync(file, 'utf8'))) {
        const target = resolveLocal(file, spec);
        const rel = target ? relative(ROOT, target) : '';
        if (
          spec === '@azure/functions' ||
          spec.startsWith('@azure/functions/') ||
          rel.startsWith('functions') ||
          rel.startsWith('tools')
        ) {
          offenders.push(`${relative(ROOT, file)} → ${spec}`);
        }
      }
    }
    assert.deepEqual(offenders, []);
  });

  test('only the storage, queue, notify and management adapters and the composition root import an Azure SDK', () => {
    const files = sources(join(ROOT, 'shared')).map((f) => ({
      path: relative(ROOT, f),
      text: readFileSync(f, 'utf8'),
    }));
    assert.ok(
      files.some((f) => f.path.startsWith('shared/compose/') && /@azure\/storage-blob|storage\/clients/.test(f.text)),
      'the composition root is where it should be',
    );
    assert.deepEqual(sdkOffenders(files), []);
  });

  test('there are no import cycles', () => {
    const g = graph();
    assert.ok(g.size > 30, `read the sources (${g.size} files)`);
    const cycle = findCycle(g);
    assert.equal(cycle?.map((f) => relative(ROOT, f)).join(' → '), undefined);
  });

  test('the CLI stands apart: the app never imports tools/cli/ or its packages, the CLI imports the app for types only', () => {
    const files = ['shared', 'functions', 'tools/cli']
      .flatMap((d) => sources(join(ROOT, d)))
      .filter((f) => !f.includes(`${sep}test${sep}`))
      .map((f) => ({ path: relative(ROOT, f), text: readFileSync(f, 'utf8') }));
    assert.ok(
      files.some((f) => f.path === 'tools/cli/main.ts') && files.some((f) => f.path.startsWith('shared/')),
      'read the sources',
    );
    assert.deepEqual(cliOffenders(files), []);
    assert.deepEqual(cliOffenders([{ path: 'shared/app.ts', text: "import { Command } from 'commander';" }]), [
      'shared/app.ts → commander',
    ]);
    assert.deepEqual(cliOffenders([{ path: 'functions/x.ts', text: "import { main } from '../tools/cli/main';" }]), [
      'functions/x.ts → ../tools/cli/main',
    ]);
    // Built from a prefix so that the planted specifiers, which climb two levels from tools/cli/, are not read as this file's own.
    const up = '../..';
    assert.deepEqual(
      cliOffenders([
        {
          path: 'tools/cli/x.ts',
          text: `import type { Report } from '${up}/shared/billing/report';\nimport { layout } from '${up}/shared/layout';`,
        },
      ]),
      [`tools/cli/x.ts → import { layout } from '${up}/shared/layout'`],
    );
  });

  test('the checks can fail: a planted cycle, a planted import and a planted SDK client are caught', () => {
    assert.deepEqual(
      sdkOffenders([
        { path: 'shared/ingest/ingest.ts', text: "import type { ContainerClient } from '@azure/storage-blob';" },
      ]),
      ['shared/ingest/ingest.ts → @azure/storage-blob'],
    );
    assert.deepEqual(
      sdkOffenders([
        {
          path: 'shared/storage/azure-blob-store.ts',
          text: "import type { ContainerClient } from '@azure/storage-blob';",
        },
      ]),
      [],
    );
    assert.deepEqual(
      sdkOffenders([
        {
          path: 'shared/scale/arm-target.ts',
          text: "import { WebSiteManagementClient } from '@azure/arm-appservice';",
        },
      ]),
      [],
    );
    assert.deepEqual(
      sdkOffenders([
        { path: 'shared/scale/agent.ts', text: "import { WebSiteManagementClient } from '@azure/arm-appservice';" },
      ]),
      ['shared/scale/agent.ts → @azure/arm-appservice'],
    );
    assert.deepEqual(
      findCycle(
        new Map([
          ['a', ['b']],
          ['b', ['c']],
          ['c', ['a']],
        ]),
      ),
      ['a', 'b', 'c', 'a'],
    );
    assert.deepEqual(
      importsOf("import { app } from '@azure/functions';\nimport type { X } from '../functions/runtime';"),
      ['@azure/functions', '../functions/runtime'],
    );
    assert.deepEqual(importsOf("export { a } from './a';\nconst m = await import('./b');"), ['./a', './b']);
  });
});
