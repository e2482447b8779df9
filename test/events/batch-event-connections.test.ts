/**
 * How a delivery reaches its receiver, over real HTTP on 127.0.0.1, each request verified with
 * `standardwebhooks`: a receiver's connection is kept and reused between attempts; a host whose
 * checked address changed gets a connection of its own to the new address (the SSRF guard's
 * promise holds with kept connections); a connection the receiver closed is not an attempt lost;
 * an IP literal is never looked up; and a receiver's connection is opened while the terminal
 * write is under way (nothing sent on it), only to an address the guard accepts, and verified
 * like any other (an untrusted certificate gets no request).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Webhook } from 'standardwebhooks';

import { eventSettings, Secret } from '../../shared/config/event-settings';
import type { HostLookup } from '../../shared/events/address-guard';
import { deliveryWarmer } from '../../shared/events/delivery-attempt';
import { EndpointAgents } from '../../shared/events/endpoint-agents';
import { postSigned } from '../../shared/events/webhook-post';

const SECRET = `whsec_${randomBytes(24).toString('base64')}`;

interface Receiver {
  server: Server;
  port: number;
  /** TCP connections accepted so far. */
  connections: number;
  /** Verified requests: their webhook-id and the address they came in on. */
  got: { id: string; local: string }[];
}

async function receiver(host: string, port = 0): Promise<Receiver> {
  const wh = new Webhook(SECRET);
  const r: Receiver = { server: createServer(), port: 0, connections: 0, got: [] };
  r.server.on('connection', () => r.connections++);
  r.server.on('request', (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      wh.verify(Buffer.concat(chunks).toString('utf8'), req.headers as Record<string, string>);
      r.got.push({ id: String(req.headers['webhook-id']), local: req.socket.localAddress ?? '' });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((ok) => r.server.listen(port, host, () => ok()));
  r.port = (r.server.address() as AddressInfo).port;
  return r;
}

async function close(r: Receiver): Promise<void> {
  r.server.closeAllConnections();
  await new Promise((ok) => r.server.close(ok));
}

const secret = new Secret(SECRET);
const body = JSON.stringify({ specversion: '1.0', id: 'x', type: 't', source: '/s' });

describe('kept connections to receivers', () => {
  let a: Receiver;
  let b: Receiver;
  const agents = new EndpointAgents();

  before(async () => {
    a = await receiver('127.0.0.1');
    // The same port on another loopback address: what a host whose DNS answer changed reaches.
    b = await receiver('127.0.0.2', a.port);
  });

  after(async () => {
    agents.close();
    await close(a);
    await close(b);
  });

  test('attempts to one receiver share one connection, each request signed and verified', async () => {
    const before = a.connections;
    for (let i = 0; i < 3; i++) {
      const result = await postSigned({
        url: `http://127.0.0.1:${a.port}/hooks`,
        eventId: `evt_keep_${i}`,
        body,
        secret,
        allowPrivate: true,
        agents,
      });
      assert.deepEqual(result, { status: 204 });
    }
    assert.deepEqual(
      a.got.slice(-3).map((g) => g.id),
      ['evt_keep_0', 'evt_keep_1', 'evt_keep_2'],
    );
    assert.equal(a.connections - before, 1, 'one TCP connection for three attempts');
  });

  test('a host that now resolves elsewhere gets a new connection to the address that was checked', async () => {
    let answer = '127.0.0.1';
    const lookups: string[] = [];
    const lookup: HostLookup = (host) => {
      lookups.push(host);
      return Promise.resolve([{ address: answer, family: 4 }]);
    };
    // A name, so that it is looked up before each attempt; `localhost`, since another name that
    // resolves to loopback is refused even when allowlisted (the DNS rebinding guard).
    const post = (id: string) =>
      postSigned({
        url: `http://localhost:${a.port}/hooks`,
        eventId: id,
        body,
        secret,
        allowPrivate: true,
        lookup,
        agents,
      });
    assert.deepEqual(await post('evt_first_answer'), { status: 204 });
    answer = '127.0.0.2';
    assert.deepEqual(await post('evt_second_answer'), { status: 204 });
    assert.deepEqual(lookups, ['localhost', 'localhost'], 'resolved before each attempt');
    assert.deepEqual(a.got.at(-1), { id: 'evt_first_answer', local: '127.0.0.1' });
    assert.deepEqual(b.got.at(-1), { id: 'evt_second_answer', local: '127.0.0.2' }, 'not the kept connection');
  });

  test('a connection the receiver closed between attempts costs no attempt', async () => {
    const c = await receiver('127.0.0.1');
    c.server.keepAliveTimeout = 50;
    try {
      const url = `http://127.0.0.1:${c.port}/hooks`;
      assert.deepEqual(await postSigned({ url, eventId: 'evt_a', body, secret, allowPrivate: true, agents }), {
        status: 204,
      });
      await new Promise((r) => setTimeout(r, 300)); // the receiver closes the idle connection
      assert.deepEqual(await postSigned({ url, eventId: 'evt_b', body, secret, allowPrivate: true, agents }), {
        status: 204,
      });
      assert.deepEqual(
        c.got.map((g) => g.id),
        ['evt_a', 'evt_b'],
      );
      assert.equal(c.connections, 2);
    } finally {
      await close(c);
    }
  });
});

describe('IP literals', () => {
  test('are never looked up, and the guard still refuses a loopback literal that is not allowed', async () => {
    const r = await receiver('127.0.0.1');
    const lookups: string[] = [];
    const lookup: HostLookup = (host) => {
      lookups.push(host);
      return Promise.reject(new Error('no lookup expected'));
    };
    try {
      const url = `http://127.0.0.1:${r.port}/hooks`;
      const ok = await postSigned({ url, eventId: 'evt_literal', body, secret, allowPrivate: true, lookup });
      assert.deepEqual(ok, { status: 204 });
      const refused = await postSigned({ url, eventId: 'evt_refused', body, secret, allowPrivate: false, lookup });
      assert.match(refused.error ?? '', /^refused: 127\.0\.0\.1 resolves to 127\.0\.0\.1/);
      const v6 = await postSigned({
        url: 'http://[::1]:9/hooks',
        eventId: 'evt_v6',
        body,
        secret,
        allowPrivate: false,
        lookup,
      });
      assert.match(v6.error ?? '', /^refused: ::1 resolves to ::1/);
      assert.deepEqual(lookups, []);
      assert.deepEqual(
        r.got.map((g) => g.id),
        ['evt_literal'],
      );
    } finally {
      await close(r);
    }
  });
});

describe('connections opened ahead of the attempt', () => {
  test('the warmer connects, sends nothing, and the attempt then uses that connection; a refused callback gets none', async () => {
    const r = await receiver('127.0.0.1');
    const agents = new EndpointAgents();
    const settings = eventSettings({ PUSHDRAIN_WEBHOOK_SECRET: SECRET });
    const warm = deliveryWarmer({ settings, agents });
    const url = `http://127.0.0.1:${r.port}/hooks`;
    try {
      // A callback to loopback without an explicit allowlist entry: the guard refuses it, no connection.
      warm([{ kind: 'callback', target: url }]);
      await new Promise((ok) => setTimeout(ok, 200));
      assert.equal(r.connections, 0);
      warm([{ kind: 'webhook', target: url }]);
      for (let i = 0; i < 100 && r.connections === 0; i++) await new Promise((ok) => setTimeout(ok, 20));
      assert.equal(r.connections, 1, 'connected ahead');
      assert.equal(r.got.length, 0, 'nothing sent on it');
      warm([{ kind: 'webhook', target: url }]);
      const result = await postSigned({ url, eventId: 'evt_warm', body, secret, allowPrivate: true, agents });
      assert.deepEqual(result, { status: 204 });
      assert.deepEqual(
        r.got.map((g) => g.id),
        ['evt_warm'],
      );
      assert.equal(r.connections, 1, 'the attempt took the connection opened ahead; a second warm opened none');
    } finally {
      agents.close();
      await close(r);
    }
  });
});

/** A throw-away self-signed certificate for 127.0.0.1 (openssl), which no attempt may trust. */
function selfSigned(): { key: string; cert: string } {
  const dir = mkdtempSync(join(tmpdir(), 'pd-hook-tls-'));
  try {
    const key = join(dir, 'key.pem');
    const cert = join(dir, 'cert.pem');
    execFileSync(
      'openssl',
      ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1'].concat([
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
      ]),
      { stdio: 'ignore' },
    );
    return { key: readFileSync(key, 'utf8'), cert: readFileSync(cert, 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('an https receiver', () => {
  test('a connection opened ahead is verified like any other: an untrusted certificate gets no request', async () => {
    let requests = 0;
    const server = createTlsServer(selfSigned(), (req, res) => {
      requests++;
      req.resume();
      res.writeHead(204).end();
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', () => ok()));
    const agents = new EndpointAgents();
    const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
    try {
      const warm = deliveryWarmer({ settings: eventSettings({ PUSHDRAIN_WEBHOOK_SECRET: SECRET }), agents });
      warm([{ kind: 'webhook', target: url }]);
      const result = await postSigned({ url, eventId: 'evt_tls', body, secret, allowPrivate: true, agents });
      assert.equal(result.status, undefined);
      assert.match(result.error ?? '', /CERT|SELF_SIGNED|certificate/i);
      assert.equal(requests, 0, 'nothing sent over an unverified connection');
    } finally {
      agents.close();
      server.closeAllConnections();
      await new Promise((ok) => server.close(ok));
    }
  });
});
