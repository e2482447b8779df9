/**
 * The route helper (functions/http-route.ts) on every guarded handler the host calls: it asks for
 * exactly the roles FUNCTION_ACCESS gives the function, and a refused caller reaches no use case
 * (no body read, no other method of the app touched) and gets the refusal, nothing else.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { HttpRequest } from '@azure/functions';

import { getBatch, getBatchReport, getBatchTimeline, listBatches } from '../../../functions/batches-http';
import type { HttpHandler } from '../../../functions/http-route';
import { postBatch } from '../../../functions/ingest-http';
import { postRedrive } from '../../../functions/redrive-http';
import { FUNCTION_ACCESS } from '../../../functions/route-access';
import { getStatus } from '../../../functions/status-http';
import { postWebhookTest } from '../../../functions/webhooks-http';
import type { PushdrainApp } from '../../../shared/app';
import { AccessError } from '../../../shared/auth/access-error';
import type { Role } from '../../../shared/auth/principal';
import { context } from '../../support/invoke';

/** Each guarded handler, by the function name it is registered under. */
const GUARDED: Record<string, { handler: HttpHandler; method: string; path: string }> = {
  postBatch: { handler: postBatch, method: 'POST', path: 'batches' },
  listBatches: { handler: listBatches, method: 'GET', path: 'batches' },
  getBatch: { handler: getBatch, method: 'GET', path: 'batches/b-1' },
  getBatchReport: { handler: getBatchReport, method: 'GET', path: 'batches/b-1/report' },
  getBatchTimeline: { handler: getBatchTimeline, method: 'GET', path: 'batches/b-1/timeline' },
  opsStatus: { handler: getStatus, method: 'GET', path: 'ops/status' },
  opsRedrive: { handler: postRedrive, method: 'POST', path: 'ops/redrive' },
  opsWebhookTest: { handler: postWebhookTest, method: 'POST', path: 'ops/webhooks/test' },
};

/** An app that refuses every caller and records what else the handler touched. */
function refusingApp(): { app: PushdrainApp; asked: (readonly Role[])[]; touched: string[] } {
  const asked: (readonly Role[])[] = [];
  const touched: string[] = [];
  const app = new Proxy({} as PushdrainApp, {
    get(_target, prop) {
      if (prop === 'authorize')
        return (_header: string | null, anyOf: readonly Role[]): Promise<never> => {
          asked.push(anyOf);
          return Promise.reject(new AccessError(403, 'this token may not do this', anyOf));
        };
      if (prop === 'then') return undefined;
      touched.push(String(prop));
      return () => {
        throw new Error(`touched ${String(prop)}`);
      };
    },
  });
  return { app, asked, touched };
}

describe('route helper', () => {
  test('every guarded function has its handler here, and no open one does', () => {
    const guarded = Object.entries(FUNCTION_ACCESS)
      .filter(([, access]) => access !== 'open')
      .map(([name]) => name)
      .sort();
    assert.deepEqual(Object.keys(GUARDED).sort(), guarded);
  });

  for (const [name, { handler, method, path }] of Object.entries(GUARDED)) {
    test(`${name}: a refused caller is answered 403 before anything else is touched`, async () => {
      const { app, asked, touched } = refusingApp();
      let bodyRead = false;
      const req = new HttpRequest({
        method,
        url: `http://localhost/api/${path}`,
        headers: {
          authorization: 'Bearer x',
          'content-type': name === 'postBatch' ? 'application/x-ndjson' : 'application/json',
        },
        params: { batchId: 'b-1' },
        ...(method === 'POST' ? { body: { string: '{}' } } : {}),
      });
      // Both ways a handler reads a body: the stream (ingest) and text() (the operator routes).
      const { body } = req;
      const text = req.text.bind(req);
      Object.defineProperty(req, 'body', { get: () => ((bodyRead = true), body) });
      Object.defineProperty(req, 'text', { value: () => ((bodyRead = true), text()) });
      const res = await handler(app, req, context(name));
      assert.equal(res.status, 403);
      assert.deepEqual(res.jsonBody, {
        type: 'tag:pushdrain,2026:forbidden',
        title: 'Forbidden',
        status: 403,
        detail: 'this token may not do this',
        error: 'forbidden',
        message: 'this token may not do this',
        requiredRoles: FUNCTION_ACCESS[name],
      });
      assert.deepEqual(asked, [FUNCTION_ACCESS[name]], 'the roles of FUNCTION_ACCESS, asked once');
      assert.deepEqual(touched, [], 'no use case reached');
      assert.equal(bodyRead, false, 'the body is not read');
    });
  }
});
