/**
 * In `entra` mode the token is checked before a byte of the body is read: HTTP streams hand the
 * handler the body as a stream (functions/http-route.ts), and the local host invokes it once the
 * headers are in (tools/devstack/host/http-server.ts). In process, a body stream that records
 * every read is never read for a refused token (and is read for an accepted one, so the probe can
 * tell). Through the local host as `npm start -- --auth entra` runs it, a 100 MiB POST without a
 * token is answered 401 long before the client has sent it, and the host's peak memory does not
 * grow by the body: docs/SECURITY.md records the figures.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';

import { HttpRequest } from '@azure/functions';

import { postBatch } from '../../functions/ingest-http';
import { type HostProcess, startHostProcess } from '../support/host-process';
import { context } from '../support/invoke';
import { until } from '../support/poll';
import { line } from '../support/route-calls';
import { testRuntime, useStorage } from '../support/storage';
import { type TestIssuer, testIssuer } from '../support/tokens';

useStorage();

const MiB = 1024 * 1024;
let iss: TestIssuer;

before(async () => {
  iss = await testIssuer('entra');
});
after(async () => {
  await iss?.close();
});

/** A POST whose body is a stream that counts every read (highWaterMark 0: nothing is read ahead). */
function probedPost(headers: Record<string, string>): { req: HttpRequest; reads: () => number } {
  let reads = 0;
  let sent = false;
  const body = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        reads++;
        if (sent) return controller.close();
        sent = true;
        controller.enqueue(new TextEncoder().encode(`${line('t1')}\n`));
      },
    },
    { highWaterMark: 0 },
  );
  const url = 'http://127.0.0.1/api/batches';
  const all = { 'content-type': 'application/x-ndjson', ...headers };
  const nativeRequest = new Request(url, { method: 'POST', headers: all, body, duplex: 'half' });
  const req = new HttpRequest({ method: 'POST', url, headers: all, nativeRequest } as ConstructorParameters<
    typeof HttpRequest
  >[0]);
  return { req, reads: () => reads };
}

describe('a refused token reads no body', () => {
  test('in process: no token, a bad token, a token without the role: 401/403 and not one read', async () => {
    const rt = await testRuntime(iss.env);
    const cases: [string, Record<string, string>, number][] = [
      ['no token', {}, 401],
      ['not a JWT', { authorization: 'Bearer not-a-token' }, 401],
      ['a reader', { authorization: `Bearer ${await iss.token('rita', ['Batches.Read'])}` }, 403],
    ];
    for (const [name, headers, status] of cases) {
      const { req, reads } = probedPost(headers);
      const res = await postBatch(rt.app, req, context('postBatch'));
      assert.equal(res.status, status, `${name}: ${JSON.stringify(res.jsonBody)}`);
      assert.equal(reads(), 0, `${name}: the body was not read`);
    }
    // The probe can tell: a submitter's batch is read, and accepted.
    const { req, reads } = probedPost({ authorization: `Bearer ${await iss.token('sam', ['Batches.Submit'])}` });
    const res = await postBatch(rt.app, req, context('postBatch'));
    assert.equal(res.status, 202, JSON.stringify(res.jsonBody));
    assert.ok(reads() > 0);
  });
});

/** Peak resident memory of a process so far (VmHWM), in bytes. */
function peakRss(pid: number): number {
  const kb = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) * 1024;
}

/**
 * Sends a POST of `size` bytes (declared) without a token, 1 MiB at a time as the socket takes it,
 * until an answer arrives or the socket closes: the status, how many bytes were out by then, and
 * the time from the first byte to the answer.
 */
async function unauthenticatedPost(port: number, size: number): Promise<{ status: number; sent: number; ms: number }> {
  const socket = connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let answer = '';
  let answeredAt = 0;
  let closed = false;
  socket.on('data', (d: Buffer) => {
    answer += d.toString('latin1');
    answeredAt ||= Date.now();
  });
  socket.on('error', () => (closed = true));
  socket.on('close', () => (closed = true));
  const started = Date.now();
  socket.write(
    `POST /api/batches HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-ndjson\r\nContent-Length: ${size}\r\n\r\n`,
  );
  const chunk = Buffer.alloc(MiB, 0x20);
  let sent = 0;
  for (let i = 0; i < size / MiB && !answeredAt && !closed; i++) {
    const drained = socket.write(chunk);
    sent += chunk.length;
    if (!drained)
      await new Promise<void>((r) => {
        const t = setTimeout(r, 2000);
        socket.once('drain', () => (clearTimeout(t), r()));
        socket.once('close', () => (clearTimeout(t), r()));
      });
  }
  const sentWhenAnswered = sent;
  await until('an answer', 30_000, () => (answeredAt ? true : undefined));
  socket.destroy();
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1]), sent: sentWhenAnswered, ms: answeredAt - started };
}

describe('through the local host (npm start -- --auth entra)', () => {
  let host: HostProcess;
  before(async () => {
    host = await startHostProcess({ ...iss.env, PUSHDRAIN_SWEEP_SCHEDULE: '0 0 0 1 1 *' }, 0, 60_000);
  });
  after(async () => {
    await host?.stop(20_000);
  });

  test('a 100 MiB POST without a token: 401 before the body is sent, no body in memory', async (t) => {
    const pid = host.pid ?? assert.fail('no host pid');
    const rssBefore = peakRss(pid);
    const got = await unauthenticatedPost(host.port, 100 * MiB);
    const rssDelta = peakRss(pid) - rssBefore;
    t.diagnostic(
      `100 MiB unauthenticated POST: ${got.status} after ${got.ms} ms, ${(got.sent / MiB).toFixed(0)} MiB out by then; host peak RSS +${(rssDelta / MiB).toFixed(1)} MiB`,
    );
    assert.equal(got.status, 401);
    assert.ok(got.sent < 50 * MiB, `answered after ${got.sent} bytes: the body was not waited for`);
    assert.ok(rssDelta < 32 * MiB, `peak RSS grew ${rssDelta} bytes`);
  });
});
