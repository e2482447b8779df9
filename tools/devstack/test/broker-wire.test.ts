/**
 * Wire-level behaviour of the development broker, checked with a bare rhea client where the SDK
 * hides it: SASL mechanisms, refusal of unknown addresses, drain echo, lock-token tag and
 * annotations.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { type Connection, type ConnectionOptions, create_container, type EventContext, type Message } from 'rhea';

import type { Broker } from '../servicebus/broker';
import { startBroker } from '../servicebus/broker';
import { lockTokenFromTag } from '../servicebus/lock-token';

/** Resolves with `value()` when `event` fires, or with `fallback` after `ms` (never hangs). */
function within<T>(ms: number, fallback: T, register: (done: (v: T) => void) => void): Promise<T> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(fallback), ms);
    register((v) => {
      clearTimeout(timer);
      resolve(v);
    });
  });
}

describe('development broker: wire level (bare rhea client)', () => {
  let broker: Broker;
  const connections: Connection[] = [];

  const open = (
    auth: { username: string; password?: string } = { username: 'RootManageSharedAccessKey' },
  ): Connection => {
    const options = { host: '127.0.0.1', port: broker.port, reconnect: false, ...auth } as ConnectionOptions;
    const conn = create_container().connect(options);
    conn.on('error', () => undefined);
    connections.push(conn);
    return conn;
  };

  const send = (conn: Connection, address: string, msg: Message): Promise<boolean> =>
    within(2000, false, (done) => {
      const sender = conn.open_sender(address);
      let sent = false;
      sender.on('sendable', () => {
        if (sent) return;
        sent = true;
        sender.send(msg);
      });
      sender.on('accepted', () => done(true));
    });

  before(async () => {
    broker = await startBroker({ entities: { queues: [{ name: 'q' }, { name: 'drain' }, { name: 'tags' }] } });
  });

  after(async () => {
    for (const c of connections) c.close();
    await broker.stop();
  });

  test('SASL ANONYMOUS and PLAIN are both accepted; an unknown address is refused with amqp:not-found', async () => {
    const refusal = (conn: Connection): Promise<string> =>
      within(2000, 'no answer', (done) => {
        conn.on('connection_open', () => {
          conn.open_sender('no-such-queue').on('sender_error', (ctx: EventContext) => {
            done(String((ctx.sender?.error as { condition?: string } | undefined)?.condition));
          });
        });
      });
    assert.equal(await refusal(open({ username: 'RootManageSharedAccessKey' })), 'amqp:not-found');
    assert.equal(
      await refusal(open({ username: 'RootManageSharedAccessKey', password: 'SAS_KEY_VALUE' })),
      'amqp:not-found',
    );
  });

  test('it listens on loopback only (it accepts any token), and answers on 127.0.0.1 and on localhost', async () => {
    assert.ok(broker.addresses.length >= 1);
    for (const a of broker.addresses) assert.ok(a === '127.0.0.1' || a === '::1', `bound to ${a}`);
    for (const host of ['127.0.0.1', 'localhost']) {
      const conn = create_container().connect({ host, port: broker.port, reconnect: false });
      conn.on('error', () => undefined);
      connections.push(conn);
      assert.equal(
        await within(2000, false, (done) => conn.on('connection_open', () => done(true))),
        true,
        `AMQP open via ${host}`,
      );
    }
  });

  test('a drain is echoed even when the deliveries it races with used all the credit', async () => {
    const conn = open();
    assert.ok(await send(conn, 'drain', { body: 'one' }));
    assert.ok(await send(conn, 'drain', { body: 'two' }));
    const bodies: unknown[] = [];
    const drained = await within(2000, false, (done) => {
      const receiver = conn.open_receiver({ source: 'drain', credit_window: 0, autoaccept: true });
      receiver.on('message', (ctx: EventContext) => bodies.push(ctx.message?.body));
      receiver.on('receiver_drained', () => done(true));
      receiver.on('receiver_open', () => {
        // One flow frame: credit 2 with drain set. The broker spends both credits on deliveries.
        receiver.add_credit(2);
        receiver.drain_credit();
      });
    });
    assert.equal(drained, true, 'receiver_drained arrived');
    assert.deepEqual(bodies, ['one', 'two']);
  });

  test('peekLock deliveries carry a .NET-order GUID tag and the Service Bus annotations', async () => {
    const conn = open();
    assert.ok(await send(conn, 'tags', { body: 'tagged' }));
    const ctx = await within<EventContext | undefined>(2000, undefined, (done) => {
      const receiver = conn.open_receiver({ source: 'tags', credit_window: 0, autoaccept: false, rcv_settle_mode: 1 });
      receiver.on('receiver_open', () => receiver.add_credit(1));
      receiver.on('message', (c: EventContext) => done(c));
    });
    assert.ok(ctx?.message && ctx.delivery);
    const tag = Buffer.from(ctx.delivery.tag);
    assert.equal(tag.length, 16);
    assert.match(lockTokenFromTag(tag) ?? '', /^[0-9a-f-]{36}$/);
    const annotations = ctx.message.message_annotations ?? {};
    assert.ok(annotations['x-opt-locked-until'] instanceof Date);
    assert.ok(annotations['x-opt-locked-until'].getTime() > Date.now());
    assert.equal(annotations['x-opt-sequence-number'], 1);
    assert.ok(annotations['x-opt-enqueued-time'] instanceof Date);
    assert.equal(annotations['x-opt-message-state'], 0);
    assert.equal(ctx.message.delivery_count ?? 0, 0);
    assert.equal(typeof ctx.message.message_id, 'string', 'broker-assigned message id');
    const settled = await within(2000, false, (done) => {
      ctx.receiver?.on('settled', () => done(true));
      ctx.delivery?.accept();
    });
    assert.equal(settled, true, 'the broker settles the accepted delivery');
  });
});
