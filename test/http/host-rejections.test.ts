/**
 * Bad requests the host layer itself answers, through the local host over real HTTP (as `npm
 * start` runs it): a body over the size limit refused before it is read, unknown routes, wrong
 * methods, encoded path traversal and broken escapes. Each is a JSON error, never a crash.
 * Then gzip bombs, and clients that go away mid-upload or mid-validation.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';

import type { PushdrainApp } from '../../shared/app';
import type { AppParts } from '../../shared/compose/app-parts';
import { loadSettings } from '../../shared/config/settings';
import type { HealthState } from '../../shared/status/process-health';
import { type Azurite, startAzurite } from '../../tools/devstack/azurite';
import { gzipBomb, validBatch } from '../support/bombs';
import { type BrokerHarness, startTestBroker } from '../support/broker';
import { CapturingPublisher } from '../support/capturing-publisher';
import { composedApp } from '../support/composed-app';
import { type HostProcess, startHostProcess } from '../support/host-process';
import { blobNames, totalQueued } from '../support/inspect';
import { invalidOnPurpose } from '../support/invalid-on-purpose';
import { quietLog, uniquePrefix } from '../support/storage';

interface ErrorBody {
  error: string;
}

/** One host for the whole file: Azurite, the development broker, and the host process over them. */
let azurite: Azurite;
let bus: BrokerHarness;
let host: HostProcess | undefined;
let port = 0;
/** The host's Storage, seen from the test (what was written). */
let observer: PushdrainApp;
let observerParts: AppParts;

before(async () => {
  [azurite, bus] = await Promise.all([startAzurite(), startTestBroker()]);
  const prefix = uniquePrefix();
  host = await startHostProcess({
    StorageConnection: azurite.connectionString,
    ServiceBusConnection: bus.broker.connectionString,
    PUSHDRAIN_NAME_PREFIX: prefix,
    PUSHDRAIN_SWEEP_SCHEDULE: '0 0 0 1 1 *',
  });
  port = host.port;
  ({ app: observer, parts: observerParts } = composedApp(
    loadSettings({ StorageConnection: azurite.connectionString, PUSHDRAIN_NAME_PREFIX: prefix }),
    { publisher: new CapturingPublisher(), log: quietLog },
  ));
});

after(async () => {
  await observer?.close();
  await host?.stop(15_000);
  await bus?.close();
  await azurite?.stop();
});

describe('through the local host over real HTTP', () => {
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
    assert.match(response, /\r\ncontent-type: application\/problem\+json\r\n/i);
    assert.equal(jsonOf(response).error, 'too_large');
    assert.ok(closed, 'the host closed the connection instead of waiting for 200 MB');
    assert.ok(Date.now() - started < 5_000);
  });

  test("unknown routes and wrong methods get the Functions host's empty 404", async () => {
    const base = `http://127.0.0.1:${port}`;
    for (const [method, path] of [
      ['GET', '/'],
      ['GET', '/api'],
      ['GET', '/api/nope'],
      ['POST', '/api/batches/b-1/report/extra'],
      ['GET', '/batches/b-1'],
      ['PUT', '/api/batches'],
      ['DELETE', '/api/batches'],
      ['DELETE', '/api/batches/b-1'],
      ['POST', '/api/health'],
      ['PATCH', '/api/batches/b-1/report'],
    ] as const) {
      const res = await fetch(`${base}${path}`, { method, headers: invalidOnPurpose() });
      assert.equal(res.status, 404, `${method} ${path}`);
      assert.equal(res.headers.get('content-length'), '0', `${method} ${path}`);
      assert.equal(res.headers.get('content-type'), null, `${method} ${path}`);
      assert.equal(res.headers.get('allow'), null, `${method} ${path}`);
      assert.equal(await res.text(), '', `${method} ${path}`);
    }
  });

  test('encoded traversal reaches the handler decoded and is refused; a broken escape is a 400, not a crash', async () => {
    const base = `http://127.0.0.1:${port}`;
    for (const path of ['/api/batches/..%2F..%2Fx', '/api/batches/%2e%2e%2fx/report', '/api/batches/B-ABC']) {
      const res = await fetch(`${base}${path}`, { headers: invalidOnPurpose() });
      assert.equal(res.status, 400, path);
      assert.equal(((await res.json()) as ErrorBody).error, 'invalid_batch_id', path);
    }
    const broken = await fetch(`${base}/api/batches/%E0%A4%A`, { headers: invalidOnPurpose() });
    assert.equal(broken.status, 400);
    assert.equal(((await broken.json()) as ErrorBody).error, 'invalid_request');
    assert.doesNotMatch(host!.output(), /HTTP dispatch failed/);
  });
});

describe('gzip bombs and clients that go away, over real HTTP', () => {
  const MiB = 1024 * 1024;

  const base = (): string => `http://127.0.0.1:${host!.port}`;
  const health = async (): Promise<HealthState> => (await (await fetch(`${base()}/api/health`)).json()) as HealthState;

  /** What the app has written and published so far: blobs, queued messages, messages the broker took in. */
  async function written(): Promise<{ blobs: string[]; queued: number; published: number }> {
    return {
      blobs: await blobNames(observerParts),
      queued: await totalQueued(observerParts),
      published: bus.broker.stats().messagesIn,
    };
  }

  /** The host's CPU time in ms from /proc (Linux); undefined where there is none. */
  function hostCpuMs(): number | undefined {
    try {
      const stat = readFileSync(`/proc/${host!.pid}/stat`, 'utf8');
      const [utime, stime] = stat
        .slice(stat.lastIndexOf(')') + 2)
        .split(' ')
        .slice(11, 13)
        .map(Number);
      return ((utime ?? 0) + (stime ?? 0)) * 10; // USER_HZ is 100 on Linux
    } catch {
      return undefined;
    }
  }

  test(
    'a 1 GiB gzip bomb of zeros and one of 250 MiB of blank lines: 413 promptly, nothing written or published',
    { timeout: 240_000 },
    async (t) => {
      const before = await written();
      const cases: [string, Buffer, RegExp][] = [
        ['1 GiB of zeros', await gzipBomb(0, 1024 * MiB), /inflates past 268435456 bytes/],
        ['250 MiB of blank lines', await gzipBomb('\n', 250 * MiB), /more than 1000000 blank lines/],
      ];
      const took: string[] = [];
      for (const [name, body, message] of cases) {
        const started = Date.now();
        const res = await fetch(`${base()}/api/batches`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-ndjson', 'content-encoding': 'gzip' },
          body,
        });
        const answer = (await res.json()) as { error: string; message: string };
        assert.equal(res.status, 413, `${name}: ${JSON.stringify(answer)}`);
        assert.equal(answer.error, 'too_large', name);
        assert.match(answer.message, message, name);
        took.push(`${name} (${(body.length / MiB).toFixed(1)} MiB gzip): ${Date.now() - started} ms`);
      }
      assert.deepEqual(await written(), before);
      t.diagnostic(`413 over HTTP in: ${took.join('; ')}`);
    },
  );

  test(
    'a client that disconnects mid-upload: the ingest stops reading, nothing is written',
    { timeout: 60_000 },
    async () => {
      const before = await written();
      const { aborted } = (await health()).ingests;
      const mark = host!.output().length;
      const socket = connect(host!.port, '127.0.0.1');
      await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
      socket.write(
        `POST /api/batches HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-ndjson\r\nContent-Length: ${50 * MiB}\r\n\r\n`,
      );
      await new Promise((r) => socket.write(Buffer.alloc(MiB, 0x20), r)); // a mebibyte of the 50 is out
      socket.destroy();
      const line = await host!.until(
        'the disconnect to be logged',
        30_000,
        () =>
          /postBatch: the client disconnected during the upload \((\d+) bytes received\)/.exec(
            host!.output().slice(mark),
          )?.[1],
      );
      assert.ok(Number(line) < 50 * MiB, 'the host saw the upload cut short');
      // The body is read as it arrives: the ingest that was validating it stopped at the cut.
      const stopped = await host!.until('the ingest to stop', 30_000, async () => {
        const ingests = (await health()).ingests;
        return ingests.inProgress === 0 ? ingests : undefined;
      });
      assert.deepEqual(stopped, { inProgress: 0, aborted: aborted + 1 }, 'the ingest stopped as aborted');
      assert.deepEqual(await written(), before);
    },
  );

  test(
    'a client that disconnects mid-validation: the host stops, writes nothing, goes idle',
    { timeout: 180_000 },
    async (t) => {
      const body = gzipSync(validBatch(1_000_000), { level: 1 });
      const before = await written();
      const { aborted } = (await health()).ingests;
      const mark = host!.output().length;
      const aborter = new AbortController();
      const started = Date.now();
      const answer = fetch(`${base()}/api/batches`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-ndjson', 'content-encoding': 'gzip' },
        body,
        signal: aborter.signal,
      }).then(
        (res) => `answered ${res.status}`,
        () => 'aborted',
      );
      // Health answers while the ingest validates: reading yields to the event loop.
      await host!.until('the ingest to start', 60_000, async () =>
        (await health()).ingests.inProgress === 1 ? true : undefined,
      );
      const validatingAt = Date.now();
      aborter.abort();
      assert.equal(
        await answer,
        'aborted',
        'the batch validated before the client went away: it must be larger for this machine',
      );
      const stoppedAfter = await host!.until(
        'the host to stop the ingest',
        60_000,
        () =>
          /postBatch: the client disconnected; the ingest stopped after (\d+) ms/.exec(host!.output().slice(mark))?.[1],
      );
      const stoppedAt = Date.now();
      assert.deepEqual((await health()).ingests, { inProgress: 0, aborted: aborted + 1 });
      // Back to idle: over the next 2 s the host uses a small part of a core (it used a whole one).
      const cpu0 = hostCpuMs();
      await new Promise((r) => setTimeout(r, 2000));
      const cpu1 = hostCpuMs();
      if (cpu0 !== undefined && cpu1 !== undefined)
        assert.ok(cpu1 - cpu0 < 1000, `host CPU after the stop: ${cpu1 - cpu0} ms in 2 s`);
      assert.deepEqual(await written(), before, 'the 1,000,000 valid transactions were not accepted');
      t.diagnostic(
        `1,000,000 transactions (${(body.length / MiB).toFixed(1)} MiB gzip): validating ${validatingAt - started} ms after the POST; ` +
          `stopped ${stoppedAt - validatingAt} ms after the disconnect (the host logged ${stoppedAfter} ms in the handler); ` +
          `host CPU in the 2 s after: ${cpu0 !== undefined && cpu1 !== undefined ? `${cpu1 - cpu0} ms` : 'n/a'}`,
      );
    },
  );
});
