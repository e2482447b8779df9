/**
 * What the deployed app may need, read from the sources with the TypeScript parser and resolver:
 * functions/ and shared/ import nothing from tools/, test/ or any other folder (a remote
 * build ships only those two and would not compile); every package they load at run time is a
 * production dependency; a type-only import comes from a package that production installs anyway;
 * and every production dependency is imported (or is a required peer of one that is), so that
 * nothing the app never loads ships in the package.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { describe, it } from 'node:test';

import ts from 'typescript';

import { repoRoot } from '../../support/repo';

/** The folders whose code runs in Azure. */
export const APP_DIRS = ['functions', 'shared'];

export interface ImportRef {
  file: string;
  line: number;
  specifier: string;
  typeOnly: boolean;
}

function tsFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return tsFiles(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

/** Static imports, re-exports, `import x = require()`, `require()`, `import()` and `import('x').T` types. */
export function importsOf(sf: ts.SourceFile): ImportRef[] {
  const out: ImportRef[] = [];
  const add = (node: ts.Node, spec: ts.Expression | undefined, typeOnly: boolean): void => {
    if (spec && ts.isStringLiteralLike(spec)) {
      out.push({
        file: sf.fileName,
        line: sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1,
        specifier: spec.text,
        typeOnly,
      });
    }
  };
  const visit = (n: ts.Node): void => {
    if (ts.isImportDeclaration(n)) {
      const c = n.importClause;
      const named = c?.namedBindings && ts.isNamedImports(c.namedBindings) ? c.namedBindings.elements : undefined;
      const onlyTypes =
        !!c && (c.isTypeOnly || (!c.name && !!named && named.length > 0 && named.every((e) => e.isTypeOnly)));
      add(n, n.moduleSpecifier, onlyTypes);
    } else if (ts.isExportDeclaration(n) && n.moduleSpecifier) {
      const named = n.exportClause && ts.isNamedExports(n.exportClause) ? n.exportClause.elements : undefined;
      add(n, n.moduleSpecifier, n.isTypeOnly || (!!named && named.length > 0 && named.every((e) => e.isTypeOnly)));
    } else if (ts.isImportEqualsDeclaration(n) && ts.isExternalModuleReference(n.moduleReference)) {
      add(n, n.moduleReference.expression, n.isTypeOnly);
    } else if (
      ts.isCallExpression(n) &&
      (n.expression.kind === ts.SyntaxKind.ImportKeyword ||
        (ts.isIdentifier(n.expression) && n.expression.text === 'require') ||
        // require.resolve('pkg/…'): the app reads that package's files at run time (the status page's MSAL).
        (ts.isPropertyAccessExpression(n.expression) &&
          ts.isIdentifier(n.expression.expression) &&
          n.expression.expression.text === 'require' &&
          n.expression.name.text === 'resolve'))
    ) {
      add(n, n.arguments[0], false);
    } else if (ts.isImportTypeNode(n) && ts.isLiteralTypeNode(n.argument)) {
      add(n, n.argument.literal, true);
    }
    n.forEachChild(visit);
  };
  visit(sf);
  return out;
}

/** `@scope/name` or `name` of a bare specifier. */
export function packageName(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

interface PackageJson {
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

/** Every way the app's imports and the production dependencies disagree, one line each. */
export function dependencyProblems(root: string): string[] {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as PackageJson;
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { dev?: boolean }>;
  };
  const declared = new Set(Object.keys(pkg.dependencies ?? {}));
  const production = new Set(
    Object.entries(lock.packages)
      .filter(([k, v]) => k.startsWith('node_modules/') && v.dev !== true)
      .map(([k]) => k.slice(k.lastIndexOf('node_modules/') + 'node_modules/'.length)),
  );
  const options: ts.CompilerOptions = {
    module: ts.ModuleKind.Node16,
    moduleResolution: ts.ModuleResolutionKind.Node16,
    allowJs: false,
  };
  const host = ts.createCompilerHost(options);
  const problems: string[] = [];
  const valueImported = new Set<string>();
  const at = (r: ImportRef): string => `${relative(root, r.file)}:${r.line}`;

  for (const file of APP_DIRS.flatMap((d) => tsFiles(join(root, d)))) {
    const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
    for (const r of importsOf(sf)) {
      if (r.specifier.startsWith('.') || r.specifier.startsWith('/')) {
        const resolved = ts.resolveModuleName(r.specifier, file, options, host).resolvedModule?.resolvedFileName;
        const target = resolved ? relative(root, resolved).split('\\').join('/') : undefined;
        if (!target) problems.push(`${at(r)} imports ${r.specifier}, which does not resolve`);
        else if (!APP_DIRS.some((d) => target.startsWith(`${d}/`)))
          problems.push(`${at(r)} imports ${target}: the deployed app holds only ${APP_DIRS.join('/ and ')}/`);
      } else if (!isBuiltin(r.specifier)) {
        const name = packageName(r.specifier);
        if (!r.typeOnly) {
          valueImported.add(name);
          if (!declared.has(name))
            problems.push(`${at(r)} loads ${name} at run time, but it is not in package.json dependencies`);
        } else if (!production.has(name)) {
          problems.push(`${at(r)} imports types from ${name}, which a production install does not hold`);
        }
      }
    }
  }

  const peers = new Set<string>();
  for (const name of valueImported) {
    const manifest = join(root, 'node_modules', name, 'package.json');
    if (!existsSync(manifest)) continue;
    const p = JSON.parse(readFileSync(manifest, 'utf8')) as PackageJson;
    for (const peer of Object.keys(p.peerDependencies ?? {}))
      if (!p.peerDependenciesMeta?.[peer]?.optional) peers.add(peer);
  }
  for (const dep of declared) {
    if (!valueImported.has(dep) && !peers.has(dep))
      problems.push(
        `${dep} is a production dependency, but nothing in ${APP_DIRS.join('/ or ')}/ loads it: it would ship unused`,
      );
  }
  return problems;
}

void describe('runtime dependencies of the deployed app', () => {
  void it('functions/ and shared/ import only each other, declared production dependencies and Node built-ins; every dependency is used', () => {
    assert.deepEqual(dependencyProblems(repoRoot()), []);
  });

  void it('the check can fail: a planted import of local/, an undeclared or dev package, and an unused dependency are each reported', () => {
    const root = mkdtempSync(join(tmpdir(), 'pushdrain-deps-'));
    try {
      const write = (rel: string, text: string): void => {
        mkdirSync(dirname(join(root, rel)), { recursive: true });
        writeFileSync(join(root, rel), text);
      };
      write('package.json', JSON.stringify({ dependencies: { used: '1.0.0', unused: '1.0.0' } }));
      write(
        'package-lock.json',
        JSON.stringify({
          packages: {
            '': {},
            'node_modules/used': {},
            'node_modules/unused': {},
            'node_modules/devtool': { dev: true },
          },
        }),
      );
      write(
        'functions/a.ts',
        "import { x } from '../local/helper';\nimport { used } from 'used';\nimport { readFileSync } from 'node:fs';\nexport const a = [x, used, readFileSync];\n",
      );
      write(
        'shared/b.ts',
        "import type { T } from 'devtool';\nimport { w } from 'devtool/sub';\nexport type B = T;\nexport const b = w;\n",
      );
      write('local/helper.ts', 'export const x = 1;\n');
      assert.deepEqual(dependencyProblems(root), [
        'functions/a.ts:1 imports local/helper.ts: the deployed app holds only functions/ and shared/',
        'shared/b.ts:1 imports types from devtool, which a production install does not hold',
        'shared/b.ts:2 loads devtool at run time, but it is not in package.json dependencies',
        'unused is a production dependency, but nothing in functions/ or shared/ loads it: it would ship unused',
      ]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  void it('type-only imports are told apart from imports that load a module', () => {
    const sf = ts.createSourceFile(
      'x.ts',
      "import type { A } from 'a';\nimport { type B } from 'b';\nimport { type C, D } from 'c';\nimport 'e';\nexport type { F } from 'f';\nexport * from 'g';\nconst h = require('h');\ntype I = import('i').I;\nvoid import('j');\n",
      ts.ScriptTarget.ES2022,
      true,
    );
    assert.deepEqual(
      importsOf(sf).map((r) => `${r.specifier}:${r.typeOnly ? 'type' : 'value'}`),
      ['a:type', 'b:type', 'c:value', 'e:value', 'f:type', 'g:value', 'h:value', 'i:type', 'j:value'],
    );
  });
});
