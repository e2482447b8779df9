/**
 * Bad requests the host layer itself answers, through the local host over real HTTP (as `npm
 * start` runs it): a body over the size limit refused before it is read, unknown routes, wrong
 * methods, encoded path traversal and broken escapes. Each is a JSON error, never a crash.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';

import { type Azurite, startAzurite } from '../local/azurite';
import { type BrokerHarness, startTestBroker } from './support/broker';
import { type HostProcess, startHostProcess } from './support/host-process';
import { uniquePrefix } from './support/storage';

interface ErrorBody {
  error: string;
}

describe('through the local host over real HTTP', () => {
  let azurite: Azurite;
  let bus: BrokerHarness;
  let host: HostProcess | undefined;
  let port = 0;

  before(async () => {
    [azurite, bus] = await Promise.all([startAzurite(), startTestBroker()]);
    host = await startHostProcess({
      StorageConnection: azurite.connectionString,
      ServiceBusConnection: bus.broker.connectionString,
      PUSHDRAIN_NAME_PREFIX: uniquePrefix(),
      PUSHDRAIN_SWEEP_SCHEDULE: '0 0 0 1 1 *',
    });
    port = host.port;
  });

  after(async () => {
    await host?.stop(15_000);
    await bus?.close();
    await azurite?.stop();
  });

  /** Sends raw bytes; resolves with what came back and whether the server closed the connection. */
  function exchange(text: string, timeoutMs = 5_000): Promise<{ response: string; closed: boolean }> {
    return new Promise((resolve) => {
      const socket = connect(port, '127.0.0.1');
      let response = '';
      const done = (closed: boolean): void => {
        clearTimeout(timer);
        socket.destroy();
        resolve({ response, closed });
      };
      const timer = setTimeout(() => done(false), timeoutMs);
      socket.on('data', (d: Buffer) => (response += d.toString('latin1')));
      socket.on('end', () => done(true));
      socket.on('error', () => done(true));
      socket.write(text);
    });
  }

  const jsonOf = (response: string): ErrorBody => {
    const length = Number(/\r\ncontent-length: (\d+)\r\n/i.exec(response)?.[1]);
    const start = response.indexOf('\r\n\r\n') + 4;
    return JSON.parse(response.slice(start, start + length)) as ErrorBody;
  };

  test('a body over 100 MB by Content-Length: 413 at once, connection closed, body never read', async () => {
    const started = Date.now();
    const { response, closed } = await exchange(
      `POST /api/batches HTTP/1.1\r\nHost: localhost:${port}\r\nContent-Type: application/x-ndjson\r\nContent-Length: ${200 * 1024 * 1024}\r\n\r\n`,
    );
    assert.match(response, /^HTTP\/1\.1 413 /);
    assert.match(response, /\r\nconnection: close\r\n/i);
    assert.match(response, /\r\ncontent-type: application\/json\r\n/i);
    assert.equal(jsonOf(response).error, 'too_large');
    assert.ok(closed, 'the host closed the connection instead of waiting for 200 MB');
    assert.ok(Date.now() - started < 5_000);
  });

  test('unknown routes are 404 JSON; a wrong method is 405 JSON with Allow', async () => {
    const base = `http://127.0.0.1:${port}`;
    for (const [method, path] of [
      ['GET', '/'],
      ['GET', '/api'],
      ['GET', '/api/nope'],
      ['POST', '/api/batches/b-1/report/extra'],
      ['GET', '/batches/b-1'],
    ] as const) {
      const res = await fetch(`${base}${path}`, { method });
      assert.equal(res.status, 404, `${method} ${path}`);
      assert.equal(res.headers.get('content-type'), 'application/json');
      assert.equal(((await res.json()) as ErrorBody).error, 'not_found');
    }
    for (const [method, path, allow] of [
      ['GET', '/api/batches', 'POST'],
      ['PUT', '/api/batches', 'POST'],
      ['DELETE', '/api/batches/b-1', 'GET'],
      ['POST', '/api/health', 'GET'],
      ['PATCH', '/api/batches/b-1/report', 'GET'],
    ] as const) {
      const res = await fetch(`${base}${path}`, { method });
      assert.equal(res.status, 405, `${method} ${path}`);
      assert.equal(res.headers.get('content-type'), 'application/json');
      assert.equal(res.headers.get('allow'), allow);
      assert.equal(((await res.json()) as ErrorBody).error, 'method_not_allowed');
    }
  });

  test('encoded traversal reaches the handler decoded and is refused; a broken escape is a 400, not a crash', async () => {
    const base = `http://127.0.0.1:${port}`;
    for (const path of ['/api/batches/..%2F..%2Fx', '/api/batches/%2e%2e%2fx/report', '/api/batches/B-ABC']) {
      const res = await fetch(`${base}${path}`);
      assert.equal(res.status, 400, path);
      assert.equal(((await res.json()) as ErrorBody).error, 'invalid_batch_id', path);
    }
    const broken = await fetch(`${base}/api/batches/%E0%A4%A`);
    assert.equal(broken.status, 400);
    assert.equal(((await broken.json()) as ErrorBody).error, 'invalid_request');
    assert.doesNotMatch(host!.output(), /HTTP dispatch failed/);
  });
});
