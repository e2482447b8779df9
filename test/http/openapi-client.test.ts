/**
 * A client generated from the OpenAPI document: test/support/openapi-types.ts is what
 * openapi-typescript makes of static/openapi.json today (so the example that uses it,
 * test/support/openapi-client-example.ts, type-checks against the document as it is), and the
 * generated types are the document's own: a field the document lacks does not type-check.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';

import { OPENAPI_PATH } from '../support/openapi-contract';
import { readRepoFile, repoRoot } from '../support/repo';
import { scratchDir } from '../support/scratch-dir';

const TYPES = 'test/support/openapi-types.ts';

/** `tsc --noEmit` over `files`, with the project's strictness. */
function typeCheck(...files: string[]): { status: number | null; output: string } {
  const root = repoRoot();
  const run = spawnSync(
    process.execPath,
    [
      join(root, 'node_modules/typescript/bin/tsc'),
      '--noEmit',
      '--strict',
      '--noUncheckedIndexedAccess',
      '--skipLibCheck',
      '--target',
      'ES2022',
      '--module',
      'node16',
      '--moduleResolution',
      'node16',
      '--types',
      'node',
      ...files,
    ],
    { cwd: root, encoding: 'utf8', timeout: 120_000 },
  );
  return { status: run.status, output: run.stdout + run.stderr };
}

describe('a client generated from the OpenAPI document', () => {
  test('test/support/openapi-types.ts is what openapi-typescript generates from the document now', () => {
    const root = repoRoot();
    const run = spawnSync(process.execPath, [join(root, 'node_modules/openapi-typescript/bin/cli.js'), OPENAPI_PATH], {
      cwd: root,
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(run.status, 0, run.stderr);
    assert.ok(run.stdout.includes('"/api/batches/{batchId}/report"'));
    assert.equal(
      run.stdout,
      readRepoFile(TYPES),
      `the generated types are stale: run npx openapi-typescript ${OPENAPI_PATH} -o ${TYPES}`,
    );
  });

  test('the example type-checks, and the same call reading a field the document lacks does not', () => {
    const dir = scratchDir('openapi-client');
    const root = repoRoot();
    const types = join(root, 'test/support/openapi-types').split('\\').join('/');
    const source = (field: string): string => `
      import type { paths } from '${types}';
      type Report = paths['/api/batches/{batchId}/report']['get']['responses'][200]['content']['application/json'];
      type Accepted = paths['/api/batches']['post']['responses'][202]['content']['application/json'];
      export const read = (r: Report, a: Accepted): number => r.totals.length + a.chunks + r.rows[0]!.${field};
    `;
    const good = join(dir, 'good.ts');
    writeFileSync(good, source('total'));
    const bad = join(dir, 'bad.ts');
    writeFileSync(bad, source('amount'));
    const ok = typeCheck(join(root, 'test/support/openapi-client-example.ts'), good);
    assert.equal(ok.status, 0, ok.output);
    const refused = typeCheck(bad);
    assert.notEqual(refused.status, 0);
    assert.match(refused.output, /Property 'amount' does not exist/);
  });
});
