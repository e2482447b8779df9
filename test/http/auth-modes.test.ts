/**
 * What a caller may do in each PUSHDRAIN_AUTH mode, through the real handlers on Azurite: a function
 * key holder in `keys` (every route its key level reaches), in `both` (PUSHDRAIN_AUTH_KEY_ROLES:
 * every role by default, fewer or none when set) and a token in `both` (its roles, whatever the key
 * could do). The platform's key check itself is the host's (test/http/auth-levels.test.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import type { HttpResponseInit } from '@azure/functions';

import { authSettings } from '../../shared/config/auth-settings';
import { ConfigError } from '../../shared/errors';
import { type Headers, type RouteName, routes } from '../support/route-calls';
import { testRuntime, useStorage } from '../support/storage';
import { type TestIssuer, testIssuer } from '../support/tokens';

useStorage();

let iss: TestIssuer;
before(async () => {
  iss = await testIssuer('both');
});
after(async () => {
  await iss.close();
});

type Row = Record<RouteName, number>;

/** Every route let through (the report is not ready: the caller got past the check and found the batch). */
const EVERYTHING: Row = {
  postBatch: 202,
  listBatches: 200,
  getBatch: 200,
  getBatchReport: 409,
  opsStatus: 200,
  opsRedrive: 200,
};

/**
 * Runs every route as `caller` against a batch submitted with `owner`'s credentials, and compares
 * the statuses with `expected`; `listed` says whether the listing showed that batch.
 */
async function matrix(
  env: Record<string, string>,
  owner: Headers,
  caller: Headers,
  expected: Row,
  listed?: boolean,
): Promise<void> {
  const rt = await testRuntime(env);
  const sent = await routes.postBatch(rt.app, owner);
  assert.equal(sent.status, 202, JSON.stringify(sent.jsonBody));
  const batchId = (sent.jsonBody as { batchId: string }).batchId;
  const got: Partial<Row> = {};
  let list: HttpResponseInit | undefined;
  for (const name of Object.keys(routes) as RouteName[]) {
    const res = await routes[name](rt.app, caller, batchId);
    got[name] = res.status ?? 0;
    if (name === 'listBatches') list = res;
  }
  assert.deepEqual(got, expected);
  if (listed !== undefined && list?.status === 200) {
    const ids = (list.jsonBody as { batches: { batchId: string }[] }).batches.map((b) => b.batchId);
    assert.equal(ids.includes(batchId), listed, `the listing ${listed ? 'shows' : 'hides'} the batch`);
  }
}

const bearer = async (name: string, roles: Parameters<TestIssuer['token']>[1]): Promise<Headers> => ({
  authorization: `Bearer ${await iss.token(name, roles)}`,
});
const KEY: Headers = {}; // the platform checked the function key; the app sees no token
/** `both` where the operator granted keys every role (the default grants none). */
const operatorKeys = (): Record<string, string> => ({
  ...iss.env,
  PUSHDRAIN_AUTH_KEY_ROLES: 'Batches.Submit,Batches.Read,Operations.Admin',
});

describe('the role matrix in each mode: key, token and both', () => {
  test('keys: a key holder reaches every route (the key level at the platform is the only gate)', async () => {
    await matrix({ PUSHDRAIN_AUTH: 'keys' }, KEY, KEY, EVERYTHING, true);
  });

  test('both, by default: a key holder holds no role, a token is required beside the key', async () => {
    const rt = await testRuntime(iss.env);
    for (const name of Object.keys(routes) as RouteName[]) {
      const res = await routes[name](rt.app, KEY, 'b-00000000-0000-0000-0000-000000000000');
      assert.equal(res.status, 401, name);
    }
    assert.deepEqual([...authSettings(iss.env).keyRoles], []);
  });

  test('both with every role granted to keys: a function key is an operator’s credential', async () => {
    await matrix(operatorKeys(), KEY, KEY, EVERYTHING, true);
    await matrix(operatorKeys(), await bearer('alice', ['Batches.Submit']), KEY, EVERYTHING, true);
  });

  test('both: a token narrows the caller to its roles, whatever its key could do', async () => {
    const alice = await bearer('alice', ['Batches.Submit']);
    await matrix(
      operatorKeys(),
      KEY,
      alice,
      { ...EVERYTHING, getBatch: 404, getBatchReport: 404, opsStatus: 403, opsRedrive: 403 },
      false,
    );
    await matrix(operatorKeys(), alice, alice, { ...EVERYTHING, opsStatus: 403, opsRedrive: 403 }, true);
    const operator = await bearer('oscar', ['Batches.Read', 'Operations.Admin']);
    await matrix(operatorKeys(), alice, operator, { ...EVERYTHING, postBatch: 403 }, true);
  });

  test('both with PUSHDRAIN_AUTH_KEY_ROLES=Batches.Submit: a key holder submits, and reads nothing back', async () => {
    const env = { ...iss.env, PUSHDRAIN_AUTH_KEY_ROLES: 'Batches.Submit' };
    const restricted: Row = {
      postBatch: 202,
      listBatches: 200,
      getBatch: 404,
      getBatchReport: 404,
      opsStatus: 403,
      opsRedrive: 403,
    };
    await matrix(env, KEY, KEY, restricted, false);
    await matrix(env, await bearer('alice', ['Batches.Submit']), KEY, restricted, false);
    await matrix(env, KEY, await bearer('rita', ['Batches.Read']), {
      ...EVERYTHING,
      postBatch: 403,
      opsRedrive: 403,
    });
  });

  test('both with PUSHDRAIN_AUTH_KEY_ROLES=none: a token is required as with entra, beside the key', async () => {
    const env = { ...iss.env, PUSHDRAIN_AUTH_KEY_ROLES: 'none' };
    const rt = await testRuntime(env);
    for (const name of Object.keys(routes) as RouteName[]) {
      const res = await routes[name](rt.app, KEY, 'b-00000000-0000-0000-0000-000000000000');
      assert.equal(res.status, 401, name);
    }
    await matrix(env, await bearer('alice', ['Batches.Submit']), await bearer('alice', ['Batches.Submit']), {
      ...EVERYTHING,
      opsStatus: 403,
      opsRedrive: 403,
    });
  });

  test('a bad PUSHDRAIN_AUTH_KEY_ROLES fails at start with a message naming it; keys and entra ignore it', () => {
    for (const bad of ['Batches.Write', 'none,Batches.Read', ',', 'batches.read']) {
      assert.throws(
        () => authSettings({ ...iss.env, PUSHDRAIN_AUTH_KEY_ROLES: bad }),
        (e: unknown) => e instanceof ConfigError && e.setting === 'PUSHDRAIN_AUTH_KEY_ROLES',
        bad,
      );
    }
    assert.deepEqual(
      [...authSettings({ ...iss.env, PUSHDRAIN_AUTH_KEY_ROLES: ' Batches.Read , Batches.Submit' }).keyRoles],
      ['Batches.Read', 'Batches.Submit'],
    );
    assert.equal(authSettings({ PUSHDRAIN_AUTH: 'keys', PUSHDRAIN_AUTH_KEY_ROLES: 'none' }).keyRoles.size, 3);
    assert.equal(authSettings({ ...iss.env, PUSHDRAIN_AUTH: 'entra' }).keyRoles.size, 0);
  });

  test('in Azure (WEBSITE_SITE_NAME set) tokens need a calling-app allowlist: empty stops the app at start, naming it', () => {
    const azure = { WEBSITE_SITE_NAME: 'func-api-x' };
    for (const mode of ['entra', 'both'])
      assert.throws(
        () => authSettings({ ...iss.env, ...azure, PUSHDRAIN_AUTH: mode }),
        (e: unknown) =>
          e instanceof ConfigError &&
          e.setting === 'PUSHDRAIN_AUTH_CLIENT_APPS' &&
          /is required in Azure with PUSHDRAIN_AUTH=/.test(e.message),
        mode,
      );
    const app = '04b07795-8ddb-461a-bbee-02f9e1bf7b46';
    assert.deepEqual(authSettings({ ...iss.env, ...azure, PUSHDRAIN_AUTH_CLIENT_APPS: app }).tokens?.clientApps, [app]);
    assert.equal(authSettings({ PUSHDRAIN_AUTH: 'keys', ...azure }).mode, 'keys', 'keys takes no token');
    assert.equal(authSettings(iss.env).tokens?.clientApps, undefined, 'locally the local issuer’s tokens pass');
  });
});
