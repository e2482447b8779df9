/**
 * The development broker process killed with SIGKILL (no shutdown hook, no final flush) and
 * started again on the same data folder, through the official SDK: every send, schedule and
 * settlement that was acknowledged before the kill holds after it; a lock held at the kill
 * comes back counted; numbering continues.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, describe, test } from 'node:test';

import { ServiceBusClient, type ServiceBusReceivedMessage } from '@azure/service-bus';

import { WATCHDOG_QUEUE } from '../../../shared/names';
import { receiveExactly } from '../../../test/support/broker';
import { startBroker } from '../servicebus/broker';
import { type BrokerProcess, startBrokerProcess } from './support/broker-process';

const dirs: string[] = [];
const brokers: BrokerProcess[] = [];
const clients: ServiceBusClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  for (const b of brokers.splice(0)) await b.kill();
});
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function broker(dir = mkdtempSync(join(tmpdir(), 'sb-crash-'))): Promise<BrokerProcess> {
  dirs.push(dir);
  const b = await startBrokerProcess(dir);
  brokers.push(b);
  return b;
}

function client(b: BrokerProcess): ServiceBusClient {
  const c = new ServiceBusClient(b.connectionString, {
    retryOptions: { retryDelayInMs: 100, maxRetryDelayInMs: 200, maxRetries: 0, timeoutInMs: 5_000 },
  });
  clients.push(c);
  return c;
}

/** Closes the clients of a killed broker without waiting on its dead connections. */
async function dropClients(): Promise<void> {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => undefined)));
}

// The broker CLI serves the app's entities; the watchdog queue is a plain queue.
const QUEUE = WATCHDOG_QUEUE;
const NO_AUTO_RENEW = { maxAutoLockRenewalDurationInMs: 0 };
const seqOf = (m: ServiceBusReceivedMessage): number => Number(m.sequenceNumber?.toString());

describe('development broker: SIGKILL loses nothing it acknowledged', () => {
  test('every send acknowledged before the kill is there after it (16 concurrent senders, kill mid-stream)', async () => {
    const b = await broker();
    const c = client(b);
    const acked = new Set<string>();
    let stop = false;
    const senders = Array.from({ length: 16 }, async (_, s) => {
      const sender = c.createSender(QUEUE);
      for (let i = 0; !stop && i < 10_000; i++) {
        const id = `s${s}-${i}`;
        try {
          await sender.sendMessages({ body: id, messageId: id });
          acked.add(id);
        } catch {
          return; // the broker is gone
        }
      }
    });
    for (let i = 0; i < 200 && acked.size < 300; i++) await new Promise((r) => setTimeout(r, 25));
    assert.ok(acked.size >= 300, `sends were acknowledged before the kill (${acked.size})`);
    await b.kill();
    stop = true;
    const ackedAtKill = new Set(acked);
    await Promise.all(senders);
    await dropClients();

    await b.restart();
    const r = client(b).createReceiver(QUEUE, { receiveMode: 'receiveAndDelete' });
    const found = new Map<string, number>();
    let maxSeq = 0;
    // An empty receive ends the search only once every acknowledged message is back: right after
    // a restart the receiver's link may still be attaching when its first short wait runs out.
    const deadline = Date.now() + 60_000;
    for (let calls = 0; calls < 400 && Date.now() < deadline; calls++) {
      const got = await r.receiveMessages(500, { maxWaitTimeInMs: 500 });
      if (got.length === 0 && [...ackedAtKill].every((id) => found.has(id))) break;
      for (const m of got) {
        found.set(String(m.messageId), (found.get(String(m.messageId)) ?? 0) + 1);
        maxSeq = Math.max(maxSeq, seqOf(m));
      }
    }
    const missing = [...ackedAtKill].filter((id) => !found.has(id));
    assert.deepEqual(missing, [], `${ackedAtKill.size} acknowledged, ${found.size} found after the restart`);
    assert.ok(
      [...found.values()].every((n) => n === 1),
      'each message once',
    );
    await client(b).createSender(QUEUE).sendMessages({ body: 'after', messageId: 'after' });
    const [next] = await receiveExactly(client(b).createReceiver(QUEUE, { receiveMode: 'receiveAndDelete' }), 1);
    assert.ok(seqOf(next!) > maxSeq, 'sequence numbers keep increasing');
  });

  test('a completion acknowledged before the kill holds; a lock held at the kill comes back counted', async () => {
    const b = await broker();
    const c = client(b);
    await c.createSender(QUEUE).sendMessages([
      { body: 'done', messageId: 'done' },
      { body: 'in flight', messageId: 'in-flight' },
    ]);
    const r = c.createReceiver(QUEUE, NO_AUTO_RENEW);
    const got = await receiveExactly(r, 2);
    assert.equal(got.length, 2);
    await r.completeMessage(got.find((m) => m.messageId === 'done')!);
    await b.kill();
    await dropClients();

    await b.restart();
    assert.match(b.output(), /1 locks? held at the last stop released and counted/);
    const back = await receiveExactly(client(b).createReceiver(QUEUE, { receiveMode: 'receiveAndDelete' }), 2, 2_000);
    assert.deepEqual(
      back.map((m) => [m.messageId, m.deliveryCount]),
      [['in-flight', 1]],
    );
  });

  test('a scheduled message survives the kill and fires at its time', async () => {
    const b = await broker();
    const at = new Date(Date.now() + 3_000);
    await client(b).createSender(QUEUE).scheduleMessages({ body: 'check', messageId: 'check' }, at);
    await b.kill();
    await dropClients();
    await b.restart();
    const [m] = await receiveExactly(client(b).createReceiver(QUEUE, { receiveMode: 'receiveAndDelete' }), 1, 10_000);
    assert.equal(m?.messageId, 'check');
    assert.ok(Date.now() >= at.getTime() - 50, 'not before its time');
  });

  test('a folder held by a live broker process is refused; after a kill it is taken over', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-crash-'));
    const b = await broker(dir);
    await assert.rejects(
      startBroker({ dataDir: dir, notice: () => undefined }),
      /in use by process \d+; stop that broker or use another folder \(SERVICEBUS_DATA_DIR\)/,
    );
    await b.kill();
    const taken = await startBroker({ dataDir: dir, notice: () => undefined });
    await taken.stop();
  });
});
