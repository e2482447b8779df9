/**
 * Telemetry through the worker's own start-up path (functions/telemetry.ts), in the local host as
 * `npm start` runs it, with Azurite and the development broker: a batch POSTed with a client
 * `traceparent` reaches a collector on 127.0.0.1 as one trace, once the host stops (its
 * appTerminate flushes), after travelling over real Service Bus messages (Diagnostic-Id).
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';

import { generate, toNdjson } from '../../tools/testkit/generate';
import { LOCAL_KEY, startLocalStack } from '../support/local-stack';

let server: Server;
let endpoint: string;
const bodies: string[] = [];

before(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      if (req.url === '/v1/traces') bodies.push(body);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(async () => {
  await new Promise((r) => server.close(r));
});

describe('telemetry in the local host', () => {
  test('a batch POSTed with a traceparent is one trace at the collector: ingest, every map and reduce, finalize', async () => {
    const trace = '4bf92f3577b34da6a3ce929d0e0e4736';
    const stack = await startLocalStack({
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      PUSHDRAIN_CHUNK_SIZE: '10',
    });
    let batchId = '';
    try {
      const res = await fetch(`${stack.host.base}/api/batches`, {
        method: 'POST',
        body: toNdjson(generate(30, 3, 5)),
        headers: {
          'Content-Type': 'application/x-ndjson',
          'x-functions-key': LOCAL_KEY,
          traceparent: `00-${trace}-00f067aa0ba902b7-01`,
        },
      });
      assert.equal(res.status, 202);
      batchId = ((await res.json()) as { batchId: string }).batchId;
      const deadline = Date.now() + 60_000;
      for (let i = 0; Date.now() < deadline && i < 600; i++) {
        const s = await fetch(`${stack.host.base}/api/batches/${batchId}`, {
          headers: { 'x-functions-key': LOCAL_KEY },
        });
        if (((await s.json()) as { status: string }).status === 'completed') break;
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      await stack.stop();
    }
    const spans = bodies.flatMap((b) =>
      (
        JSON.parse(b) as {
          resourceSpans: { scopeSpans: { spans: { traceId: string; name: string; parentSpanId?: string }[] }[] }[];
        }
      ).resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)),
    );
    const names = spans.filter((s) => s.traceId === trace).map((s) => s.name);
    const count = (n: string): number => names.filter((x) => x === n).length;
    assert.deepEqual(
      [count('pushdrain.ingest'), count('pushdrain.map'), count('pushdrain.reduce'), count('pushdrain.finalize')],
      [1, 3, 3, 1],
      `spans of ${batchId} in the client's trace`,
    );
  });
});
