/**
 * The development broker's fault switches and stats, observed through the real SDK:
 * ServerBusy, forced detach, dropped connections, latency.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';

import { isServiceBusError } from '@azure/service-bus';

import { type BrokerHarness, queue, receiveExactly, startTestBroker } from '../../../test/support/broker';
import { waitFor } from '../../../test/support/poll';

describe('development broker: faults and stats', () => {
  let h: BrokerHarness;

  before(async () => {
    h = await startTestBroker({
      entities: { queues: ['busy', 'busy-retry', 'detach', 'fallback', 'drop', 'slow', 'idle'].map((n) => queue(n)) },
    });
  });

  afterEach(async () => {
    h.broker.faults.reset();
    await h.closeClients();
  });

  after(async () => {
    await h.close();
  });

  test('ServerBusy with no retries surfaces as ServiceBusError code ServiceBusy', async () => {
    h.broker.faults.serverBusy(1);
    const sender = h.client({ maxRetries: 0 }).createSender('busy');
    await assert.rejects(
      sender.sendMessages({ body: 'x' }),
      (err) => isServiceBusError(err) && err.code === 'ServiceBusy',
    );
    await sender.sendMessages({ body: 'y' });
    const got = await receiveExactly(h.client().createReceiver('busy', { receiveMode: 'receiveAndDelete' }), 1);
    assert.deepEqual(
      got.map((m) => m.body as string),
      ['y'],
      'the refused send stored nothing',
    );
  });

  test('ServerBusy is retried by the SDK and the send then succeeds once', async () => {
    const before = h.broker.stats();
    h.broker.faults.serverBusy(2);
    await h.client({ maxRetries: 3 }).createSender('busy-retry').sendMessages({ body: 'eventually' });
    const after = h.broker.stats();
    assert.equal(after.serverBusy - before.serverBusy, 2);
    assert.equal(after.send - before.send, 3, 'two refusals and one success');
    const receiver = h.client().createReceiver('busy-retry', { receiveMode: 'receiveAndDelete' });
    assert.equal((await receiveExactly(receiver, 1)).length, 1);
    assert.equal((await receiver.receiveMessages(1, { maxWaitTimeInMs: 150 })).length, 0, 'stored once');
  });

  test('detach: a streaming receiver reports the error, re-attaches and keeps receiving', async () => {
    const client = h.client();
    const seen: string[] = [];
    const errors: Error[] = [];
    const sub = client.createReceiver('detach').subscribe({
      processMessage: async (m) => {
        seen.push(m.body as string);
        return Promise.resolve();
      },
      processError: async (args) => {
        errors.push(args.error);
        return Promise.resolve();
      },
    });
    const sender = client.createSender('detach');
    await sender.sendMessages({ body: 'before' });
    assert.ok(await waitFor(() => seen.length === 1));
    const attachBefore = h.broker.stats().attach;
    h.broker.faults.detach('detach');
    assert.ok(await waitFor(() => errors.length > 0), 'processError called');
    assert.match(String(errors[0]?.message), /detach/i);
    await sender.sendMessages({ body: 'after' });
    assert.ok(await waitFor(() => seen.includes('after'), 5000), 'received after re-attaching');
    assert.ok(h.broker.stats().attach > attachBefore, 'links attached again');
    await sub.close();
  });

  test('after a detach, settlement falls back to $management update-disposition', async () => {
    const client = h.client();
    await client.createSender('fallback').sendMessages([{ body: 'done' }, { body: 'bad' }]);
    const receiver = client.createReceiver('fallback');
    const got = await receiveExactly(receiver, 2);
    assert.equal(got.length, 2);
    const before = h.broker.stats();
    h.broker.faults.detach('fallback');
    assert.ok(await waitFor(() => h.broker.stats().detach > before.detach), 'the SDK answered the detach');
    await receiver.completeMessage(got[0]!);
    await receiver.deadLetterMessage(got[1]!, {
      deadLetterReason: 'Invalid',
      deadLetterErrorDescription: 'after detach',
    });
    assert.equal(h.broker.stats()['management:update-disposition'], (before['management:update-disposition'] ?? 0) + 2);
    const [d] = await receiveExactly(client.createReceiver('fallback', { subQueueType: 'deadLetter' }), 1);
    assert.equal(d?.body, 'bad');
    assert.equal(d?.deadLetterReason, 'Invalid');
    assert.equal((await receiver.peekMessages(2)).length, 0, 'both settled');
  });

  test('dropConnections: the SDK reconnects; a streaming receiver recovers and later sends work', async () => {
    const client = h.client();
    const sender = client.createSender('drop');
    const seen: string[] = [];
    const sub = client.createReceiver('drop').subscribe({
      processMessage: async (m) => {
        seen.push(m.body as string);
        return Promise.resolve();
      },
      processError: async () => Promise.resolve(),
    });
    await sender.sendMessages({ body: 'first' });
    assert.ok(await waitFor(() => seen.length === 1));
    const connectionsBefore = h.broker.stats().connections;
    h.broker.faults.dropConnections();
    // The client learns of the drop on its next socket event; a send issued in this same tick
    // would sit on the dead link until its operation timeout (SDK behaviour).
    await new Promise((r) => setTimeout(r, 100));
    await sender.sendMessages({ body: 'second' });
    assert.ok(await waitFor(() => seen.includes('second'), 8000), 'the receiver reconnected and got the later message');
    assert.ok(h.broker.stats().connections > connectionsBefore, 'a new connection was opened');
    await sub.close();
  });

  test('latency delays replies and deliveries (lower bound only)', async () => {
    const client = h.client();
    const sender = client.createSender('slow');
    await sender.sendMessages({ body: 'warm-up' }); // links attached before timing
    h.broker.faults.setLatency(250);
    const t0 = Date.now();
    await sender.sendMessages({ body: 'slow' });
    assert.ok(Date.now() - t0 >= 240, `send took ${Date.now() - t0} ms`);
    const receiver = client.createReceiver('slow', { receiveMode: 'receiveAndDelete' });
    const t1 = Date.now();
    const got = await receiveExactly(receiver, 2, 5000);
    assert.ok(Date.now() - t1 >= 240, `receive took ${Date.now() - t1} ms`);
    assert.equal(got.length, 2);
  });

  test('stats count operations and reset; an idle streaming receiver costs no operations', async () => {
    const client = h.client();
    const sub = client.createReceiver('idle').subscribe({
      processMessage: async () => Promise.resolve(),
      processError: async () => Promise.resolve(),
    });
    const flowsBefore = h.broker.stats().flow;
    assert.ok(await waitFor(() => h.broker.stats().flow > flowsBefore), 'receiver granted credit');
    h.broker.resetStats();
    await new Promise((r) => setTimeout(r, 500));
    const idle = h.broker.stats();
    assert.deepEqual(
      Object.entries(idle).filter(([, v]) => v !== 0),
      [],
      'nothing happened while idle',
    );
    await client.createSender('idle').sendMessages({ body: 'wake' });
    assert.ok(await waitFor(() => h.broker.stats().complete === 1));
    const s = h.broker.stats();
    assert.equal(s.send, 1);
    assert.equal(s.deliver, 1);
    await sub.close();
  });
});
