/**
 * docs/SECURITY.md's keys, checked on the registrations the Functions host would receive (captured
 * in a child process by local/host/print-registrations): batch routes need a function key, admin
 * routes the admin (master) key, and only the health check is anonymous.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, test } from 'node:test';

import { repoRoot } from './support/repo';

interface Route {
  functionName: string;
  template: string;
  authLevel: string;
}

describe('HTTP auth levels', () => {
  test('auth levels: batch routes need a function key, admin routes the admin key, only health is anonymous', () => {
    const root = repoRoot();
    const run = spawnSync(process.execPath, [join(root, 'dist/local/host/print-registrations.js')], { cwd: root, encoding: 'utf8', timeout: 30_000 });
    assert.equal(run.status, 0, run.stderr);
    const routes = (JSON.parse(run.stdout) as { routes: Route[] }).routes;
    assert.ok(routes.length >= 4);
    for (const r of routes) {
      const expected = r.template === 'api/health' ? 'anonymous' : r.template.startsWith('api/admin/') ? 'admin' : 'function';
      assert.equal(r.authLevel, expected, `${r.functionName} (${r.template})`);
    }
    for (const template of ['api/batches', 'api/batches/{batchId}', 'api/batches/{batchId}/report', 'api/health']) {
      assert.ok(routes.some((r) => r.template === template), template);
    }
    const redrive = routes.find((r) => r.template === 'api/admin/redrive');
    if (redrive) assert.equal(redrive.authLevel, 'admin');
  });
});
