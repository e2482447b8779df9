/**
 * docs/SECURITY.md's keys, checked on the registrations the Functions host would receive (captured
 * in a child process by tools/devstack/host/print-registrations): batch routes and read-only operator views
 * need a function key, admin routes that change something the admin (master) key, and only the
 * health check, the status page shell (no data, no key) and the callback keys (public keys) are
 * anonymous.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, test } from 'node:test';

import { repoRoot } from '../support/repo';

interface Route {
  functionName: string;
  template: string;
  authLevel: string;
}

describe('HTTP auth levels', () => {
  test('auth levels: batch routes and read-only views need a function key, changing admin routes the admin key, only health, the page shell, the callback keys and the OpenAPI document are anonymous', () => {
    const root = repoRoot();
    const run = spawnSync(process.execPath, [join(root, 'dist/tools/devstack/host/print-registrations.js')], {
      cwd: root,
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(run.status, 0, run.stderr);
    const routes = (JSON.parse(run.stdout) as { routes: (Route & { methods: string[] })[] }).routes;
    assert.ok(routes.length >= 4);
    const ANONYMOUS = ['api/health', 'api/dashboard', 'api/events/keys', 'api/openapi.json'];
    for (const r of routes) {
      const readOnly = r.methods.every((m) => m === 'GET' || m === 'HEAD');
      const expected = ANONYMOUS.includes(r.template)
        ? 'anonymous'
        : r.template.startsWith('api/ops/') && !readOnly
          ? 'admin'
          : 'function';
      assert.equal(r.authLevel, expected, `${r.functionName} (${r.template})`);
    }
    assert.equal(routes.find((r) => r.template === 'api/ops/status')?.authLevel, 'function');
    for (const template of ['api/batches', 'api/batches/{batchId}', 'api/batches/{batchId}/report', 'api/health']) {
      assert.ok(
        routes.some((r) => r.template === template),
        template,
      );
    }
    const redrive = routes.find((r) => r.template === 'api/ops/redrive');
    if (redrive) assert.equal(redrive.authLevel, 'admin');
  });

  test('PUSHDRAIN_AUTH=entra: the platform lets every route through, the app checks the token (test/entra-access)', () => {
    const root = repoRoot();
    const run = spawnSync(process.execPath, [join(root, 'dist/tools/devstack/host/print-registrations.js')], {
      cwd: root,
      encoding: 'utf8',
      timeout: 30_000,
      env: { PUSHDRAIN_AUTH: 'entra' },
    });
    assert.equal(run.status, 0, run.stderr);
    const routes = (JSON.parse(run.stdout) as { routes: Route[] }).routes;
    assert.ok(routes.length >= 4);
    for (const r of routes) assert.equal(r.authLevel, 'anonymous', `${r.functionName} (${r.template})`);
  });

  test('PUSHDRAIN_AUTH=both keeps the key levels (the platform checks the key, a token narrows the caller)', () => {
    const root = repoRoot();
    const run = spawnSync(process.execPath, [join(root, 'dist/tools/devstack/host/print-registrations.js')], {
      cwd: root,
      encoding: 'utf8',
      timeout: 30_000,
      env: { PUSHDRAIN_AUTH: 'both' },
    });
    assert.equal(run.status, 0, run.stderr);
    const routes = (JSON.parse(run.stdout) as { routes: Route[] }).routes;
    assert.equal(routes.find((r) => r.template === 'api/batches')?.authLevel, 'function');
    assert.equal(routes.find((r) => r.template === 'api/ops/redrive')?.authLevel, 'admin');
  });
});
