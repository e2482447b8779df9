/**
 * PUSHDRAIN_AUTH=entra through the real handlers on Azurite, with tokens of the local issuer
 * validated by the same TokenVerifier as in Azure: a matrix of every data route × each role and
 * each bad credential (each refusal makes no Storage request at all), and two submitters who cannot
 * read, find or infer each other's batches.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { HttpRequest } from '@azure/functions';

import { getBatchReport } from '../../functions/batches-http';
import type { Role } from '../../shared/auth/principal';
import type { BatchListing } from '../../shared/batch/batch-list';
import type { BatchPage } from '../../shared/batch/batch-pages';
import type { Report } from '../../shared/billing/report';
import { blobNames, totalQueued } from '../support/inspect';
import { invalidOnPurpose } from '../support/invalid-on-purpose';
import { completed, context, pump } from '../support/invoke';
import { type Headers, line, list, post, type RouteName, routes } from '../support/route-calls';
import { type TestRuntime, testRuntime, useStorage } from '../support/storage';
import { algNoneToken, forgedClientPrincipal, type TestIssuer, testIssuer } from '../support/tokens';

useStorage();

let iss: TestIssuer;
before(async () => {
  iss = await testIssuer();
});
after(async () => {
  await iss.close();
});

const bearer = (token: string): Headers => ({ authorization: `Bearer ${token}` });

/** The answer each role gets on each route, for a batch that alice (a submitter) sent. */
const ALLOWED: Record<RouteName, Partial<Record<Role, number>>> = {
  postBatch: { 'Batches.Submit': 202 },
  listBatches: { 'Batches.Submit': 200, 'Batches.Read': 200 },
  getBatch: { 'Batches.Submit': 200, 'Batches.Read': 200 },
  getBatchReport: { 'Batches.Submit': 409, 'Batches.Read': 409 }, // not completed yet: past the check, found
  opsStatus: { 'Batches.Read': 200 },
  opsRedrive: { 'Operations.Admin': 200 },
};

async function storageState(rt: TestRuntime): Promise<string> {
  return JSON.stringify({ blobs: await blobNames(rt.observerParts), queued: await totalQueued(rt.observerParts) });
}

const requests = (rt: TestRuntime): number =>
  Object.values(rt.app.storageTransactions()).reduce((n: number, v) => n + (typeof v === 'number' ? v : 0), 0);

describe('PUSHDRAIN_AUTH=entra: every route × every role and bad credential', () => {
  test('the matrix: allowed roles get through, everyone else 401/403 with no Storage request', async () => {
    const rt = await testRuntime(iss.env);
    const accepted = await post(rt.app, bearer(await iss.token('alice', ['Batches.Submit'])));
    assert.equal(accepted.status, 202, JSON.stringify(accepted.jsonBody));
    const batchId = (accepted.jsonBody as { batchId: string }).batchId;
    assert.ok(requests(rt) > 0, 'the meter counts this app’s Storage requests (so an unchanged count means none)');

    const bad: Record<string, { headers: Headers; status: 401 }> = {
      'no token': { headers: {}, status: 401 },
      expired: {
        headers: bearer(await iss.token('alice', ['Batches.Submit', 'Batches.Read'], { lifetimeSeconds: -600 })),
        status: 401,
      },
      'another audience': {
        headers: bearer(await iss.token('alice', ['Batches.Submit', 'Batches.Read'], { audience: 'api://other' })),
        status: 401,
      },
      'unknown signing key': {
        headers: bearer(await iss.foreignKeyToken('alice', ['Batches.Submit', 'Batches.Read', 'Operations.Admin'])),
        status: 401,
      },
      'alg none': { headers: bearer(algNoneToken(iss.issuer.issuer, iss.issuer.audience)), status: 401 },
      'forged X-MS-CLIENT-PRINCIPAL': {
        headers: { 'x-ms-client-principal': forgedClientPrincipal(), 'x-ms-client-principal-idp': 'aad' },
        status: 401,
      },
      'not a bearer token': { headers: { authorization: 'Basic YWxpY2U6c2VjcmV0' }, status: 401 },
    };
    const roleTokens: Record<string, { headers: Headers; role?: Role }> = {
      'no role': { headers: bearer(await iss.token('carol', [])) },
      'Batches.Submit': { headers: bearer(await iss.token('alice', ['Batches.Submit'])), role: 'Batches.Submit' },
      'Batches.Read': { headers: bearer(await iss.token('rita', ['Batches.Read'])), role: 'Batches.Read' },
      'Operations.Admin': { headers: bearer(await iss.token('oscar', ['Operations.Admin'])), role: 'Operations.Admin' },
    };

    let checked = 0;
    for (const name of Object.keys(routes) as RouteName[]) {
      for (const [label, { headers, status }] of Object.entries(bad)) {
        const before = await storageState(rt);
        const used = requests(rt);
        const res = await routes[name](rt.app, headers, batchId);
        assert.equal(res.status, status, `${name} with ${label}: ${JSON.stringify(res.jsonBody)}`);
        assert.equal((res.jsonBody as { error: string }).error, 'unauthorized', `${name} with ${label}`);
        assert.equal((res.headers as Record<string, string>)['WWW-Authenticate'], 'Bearer error="invalid_token"');
        assert.equal(requests(rt), used, `${name} with ${label} made a Storage request`);
        assert.equal(await storageState(rt), before, `${name} with ${label} wrote something`);
        checked++;
      }
      for (const [label, { headers, role }] of Object.entries(roleTokens)) {
        const expected = (role && ALLOWED[name][role]) ?? 403;
        const before = await storageState(rt);
        const used = requests(rt);
        const res = await routes[name](rt.app, headers, batchId);
        assert.equal(res.status, expected, `${name} as ${label}: ${JSON.stringify(res.jsonBody)}`);
        if (expected === 403) {
          const body = res.jsonBody as { error: string; message: string; requiredRoles: string[] };
          assert.equal(body.error, 'forbidden');
          assert.ok(body.requiredRoles.length > 0);
          for (const r of body.requiredRoles) assert.match(body.message, new RegExp(r.replace('.', '\\.')));
          assert.equal(requests(rt), used, `${name} as ${label} made a Storage request`);
          assert.equal(await storageState(rt), before, `${name} as ${label} wrote something`);
        }
        checked++;
      }
    }
    assert.equal(checked, Object.keys(routes).length * 11);
  });

  test('a forged X-MS-CLIENT-PRINCIPAL beside a real token adds nothing: a submitter stays a submitter', async () => {
    const rt = await testRuntime(iss.env);
    const bob = bearer(await iss.token('bob', ['Batches.Submit']));
    const forged = { 'x-ms-client-principal': forgedClientPrincipal() };
    const alices = await post(rt.app, bearer(await iss.token('alice', ['Batches.Submit'])));
    const id = (alices.jsonBody as { batchId: string }).batchId;
    assert.equal((await routes.getBatch(rt.app, { ...bob, ...forged }, id)).status, 404);
    assert.equal((await routes.opsStatus(rt.app, { ...bob, ...forged })).status, 403);
    assert.equal((await routes.opsRedrive(rt.app, { ...bob, ...forged })).status, 403);
  });
});

describe('two submitters cannot read, find or infer each other’s batches', () => {
  test('status, report, Idempotency-Key replay and the status listing; the submitter on manifest and report', async () => {
    const rt = await testRuntime(iss.env);
    const alice = bearer(await iss.token('alice', ['Batches.Submit']));
    const bob = bearer(await iss.token('bob', ['Batches.Submit']));
    const reader = bearer(await iss.token('rita', ['Batches.Read']));
    const body = [line('t1'), line('t2', 'a2')].join('\n');

    const a = await post(rt.app, alice, body, 'order-2026-03');
    assert.equal(a.status, 202);
    const aliceBatch = (a.jsonBody as { batchId: string }).batchId;
    await pump(rt.app, rt.events, () => completed(rt.observer, aliceBatch), 30_000);

    // Alice sees hers, with its report; the report and the manifest name her.
    assert.equal((await routes.getBatch(rt.app, alice, aliceBatch)).status, 200);
    const report = await routes.getBatchReport(rt.app, alice, aliceBatch);
    assert.equal(report.status, 200);
    const submitter = (report.jsonBody as Report).submitter;
    assert.equal(submitter?.name, 'alice');
    assert.match(submitter?.objectId ?? '', /^[0-9a-f-]{36}$/);
    assert.ok(submitter?.appId);
    const manifest = await rt.observerParts.manifests.read(aliceBatch);
    assert.deepEqual(manifest?.manifest.submitter, submitter);

    // Bob: alice's batch answers exactly as a batch that does not exist.
    const missing = 'b-00000000-0000-0000-0000-000000000000';
    for (const route of [routes.getBatch, routes.getBatchReport]) {
      const theirs = await route(rt.app, bob, aliceBatch);
      const none = await route(rt.app, bob, missing);
      assert.equal(theirs.status, 404);
      assert.deepEqual(theirs.jsonBody, none.jsonBody);
      assert.deepEqual(theirs.headers, none.headers);
    }
    const csv = await getBatchReport(
      rt.app,
      new HttpRequest({
        method: 'GET',
        url: `http://localhost/api/batches/${aliceBatch}/report?format=csv`,
        headers: bob,
        params: { batchId: aliceBatch },
        query: { format: 'csv' },
      }),
      context('getBatchReport'),
    );
    assert.equal(csv.status, 404);

    // Bob reusing alice's Idempotency-Key: the same body makes his own new batch (no replay of
    // hers), another body is no idempotency_conflict (which would tell him the key is taken).
    const sameBody = await post(rt.app, bob, body, 'order-2026-03');
    assert.equal(sameBody.status, 202);
    assert.equal((sameBody.headers as Record<string, string>)['Idempotent-Replayed'], undefined);
    const bobBatch = (sameBody.jsonBody as { batchId: string }).batchId;
    assert.notEqual(bobBatch, aliceBatch);
    assert.equal((sameBody.jsonBody as { status: string }).status, 'accepted');
    const otherBody = await post(rt.app, bob, line('zz'), 'order-2026-03');
    assert.equal(otherBody.status, 422, 'his own key with another body conflicts with his own batch');
    const aliceAgain = await post(rt.app, alice, body, 'order-2026-03');
    assert.equal(aliceAgain.status, 202);
    assert.equal((aliceAgain.jsonBody as { batchId: string }).batchId, aliceBatch);
    assert.equal((aliceAgain.headers as Record<string, string>)['Idempotent-Replayed'], 'true');
    assert.equal((await routes.getBatch(rt.app, alice, bobBatch)).status, 404);

    // The status listing is for readers only; a reader sees both, each with its submitter.
    assert.equal((await routes.opsStatus(rt.app, bob)).status, 403);
    const listing = (await routes.opsStatus(rt.app, reader)).jsonBody as { batches: BatchListing };
    const all = [...listing.batches.open, ...listing.batches.recent];
    assert.equal(all.find((b) => b.batchId === aliceBatch)?.submitter?.name, 'alice');
    assert.equal(all.find((b) => b.batchId === bobBatch)?.submitter?.name, 'bob');
    // A reader reads any batch.
    assert.equal((await routes.getBatch(rt.app, reader, bobBatch)).status, 200);
    await pump(rt.app, rt.events, () => completed(rt.observer, bobBatch), 30_000);
  });
});

describe('PUSHDRAIN_AUTH=both: the platform checks the key, a token narrows the caller', () => {
  test('no token is a key holder; a bad token is refused; a submitter token is isolated', async () => {
    const both = await testIssuer('both');
    try {
      // Keys hold no role in `both` unless granted: here the operator granted every role.
      const rt = await testRuntime({
        ...both.env,
        PUSHDRAIN_AUTH_KEY_ROLES: 'Batches.Submit,Batches.Read,Operations.Admin',
      });
      const keyed = await post(rt.app, {});
      assert.equal(keyed.status, 202);
      const keyedBatch = (keyed.jsonBody as { batchId: string }).batchId;
      assert.equal((await routes.getBatch(rt.app, {}, keyedBatch)).status, 200);
      const expired = bearer(await both.token('alice', ['Batches.Read'], { lifetimeSeconds: -600 }));
      assert.equal((await routes.getBatch(rt.app, expired, keyedBatch)).status, 401);
      const alice = bearer(await both.token('alice', ['Batches.Submit']));
      assert.equal((await routes.getBatch(rt.app, alice, keyedBatch)).status, 404);
      assert.equal((await routes.opsStatus(rt.app, alice)).status, 403);
      await pump(rt.app, rt.events, () => completed(rt.observer, keyedBatch), 30_000);
    } finally {
      await both.close();
    }
  });
});

describe('GET /api/batches: a submitter lists its own batches, a reader every batch', () => {
  test('two submitters never see each other’s batches, page by page; the cost of a page; bad queries cost nothing', async (t) => {
    const rt = await testRuntime(iss.env);
    const alice = bearer(await iss.token('alice', ['Batches.Submit']));
    const bob = bearer(await iss.token('bob', ['Batches.Submit']));
    const reader = bearer(await iss.token('rita', ['Batches.Read']));
    const submit = async (h: Headers, id: string): Promise<string> => {
      const res = await post(rt.app, h, line(id));
      assert.equal(res.status, 202, JSON.stringify(res.jsonBody));
      return (res.jsonBody as { batchId: string }).batchId;
    };
    const alices: string[] = [];
    const bobs: string[] = [];
    for (let i = 0; i < 3; i++) {
      alices.push(await submit(alice, `a${i}`));
      if (i < 2) bobs.push(await submit(bob, `b${i}`));
      await new Promise((r) => setTimeout(r, 5)); // distinct submission times, so newest-first is defined
    }
    const page = async (h: Headers, query: Record<string, string> = {}): Promise<BatchPage> => {
      const res = await list(rt.app, h, query);
      assert.equal(res.status, 200, JSON.stringify(res.jsonBody));
      return res.jsonBody as BatchPage;
    };

    const total = (): number => rt.app.storageTransactions().total ?? 0;
    const used = total();
    const first = await page(alice, { limit: '2' });
    const cost = total() - used;
    assert.equal(first.scope, 'own');
    assert.deepEqual(
      first.batches.map((b) => b.batchId),
      [alices[2], alices[1]],
      'her newest two, newest first',
    );
    assert.ok(first.next);
    for (const b of first.batches) {
      assert.equal(b.submitter?.name, 'alice');
      assert.equal(b.status, 'accepted');
      assert.equal(b.transactions, 1);
    }
    // One listing under her prefix, one metadata read per batch shown: nothing scales with bob's.
    assert.equal(cost, 1 + first.batches.length, `a page of ${first.batches.length} cost ${cost} Storage requests`);
    t.diagnostic(`submitter page of 2: ${cost} Storage requests`);
    const second = await page(alice, { limit: '2', cursor: first.next ?? '' });
    assert.deepEqual(
      second.batches.map((b) => b.batchId),
      [alices[0]],
    );
    assert.equal(second.next, undefined);

    const his = await page(bob);
    assert.equal(his.scope, 'own');
    assert.deepEqual(his.batches.map((b) => b.batchId).sort(), [...bobs].sort());
    // Her cursor in his hands still lists under his own prefix only.
    const borrowed = await page(bob, { cursor: first.next ?? '' });
    for (const b of borrowed.batches) assert.ok(bobs.includes(b.batchId));

    const before = total();
    const everyone = await page(reader, { limit: '100' });
    t.diagnostic(`reader page over ${everyone.batches.length} batches: ${total() - before} Storage requests`);
    assert.equal(everyone.scope, 'all');
    const ids = everyone.batches.map((b) => b.batchId);
    for (const id of [...alices, ...bobs]) assert.ok(ids.includes(id), id);
    const times = everyone.batches.map((b) => b.submittedAt);
    assert.deepEqual(times, [...times].sort().reverse(), 'newest first');

    for (const query of [{ limit: '0' }, { limit: '101' }, { limit: 'x' }, { cursor: '../owners/x' }] as Record<
      string,
      string
    >[]) {
      const state = await storageState(rt);
      const n = requests(rt);
      // A limit out of 1–100 is outside the document; a cursor is any string there, the app's to judge.
      const res = await list(rt.app, query.limit === undefined ? alice : invalidOnPurpose(alice), query);
      assert.equal(res.status, 400, JSON.stringify(query));
      assert.equal(requests(rt), n, `${JSON.stringify(query)} made a Storage request`);
      assert.equal(await storageState(rt), state);
    }
  });

  test('with function keys (PUSHDRAIN_AUTH=keys) the key holder lists every batch', async () => {
    const rt = await testRuntime({ PUSHDRAIN_AUTH: 'keys' });
    const res = await post(rt.app, {});
    assert.equal(res.status, 202);
    const batchId = (res.jsonBody as { batchId: string }).batchId;
    const listed = await list(rt.app, {});
    assert.equal(listed.status, 200);
    const body = listed.jsonBody as BatchPage;
    assert.equal(body.scope, 'all');
    assert.ok(body.batches.some((b) => b.batchId === batchId));
  });
});
