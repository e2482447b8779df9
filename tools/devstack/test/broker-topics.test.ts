/**
 * The development broker with the repo's own entity list (infra/servicebus-entities.json, found
 * by walking up from the build output): topic fan-out and correlation filters.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { type BrokerHarness, receiveExactly, startTestBroker } from '../../../test/support/broker';

describe('development broker: topics from infra/servicebus-entities.json', () => {
  let h: BrokerHarness;

  before(async () => {
    h = await startTestBroker();
  });

  after(async () => {
    await h.close();
  });

  test('correlation filters: role=input reaches drain and scale, not aggregate', async () => {
    const client = h.client();
    await client
      .createSender('work-detected')
      .sendMessages([
        { body: 'in', applicationProperties: { role: 'input' } },
        { body: 'out', applicationProperties: { role: 'output' } },
        { body: 'none' },
      ]);
    const bodies = async (sub: string, n: number): Promise<string[]> => {
      const r = client.createReceiver('work-detected', sub, { receiveMode: 'receiveAndDelete' });
      const got = await receiveExactly(r, n);
      const extra = await r.receiveMessages(1, { maxWaitTimeInMs: 150 });
      return [...got, ...extra].map((m) => m.body as string);
    };
    assert.deepEqual(await bodies('drain', 1), ['in']);
    assert.deepEqual(await bodies('aggregate', 1), ['out']);
    assert.deepEqual(await bodies('scale', 3), ['in', 'out', 'none']);
  });

  test('time-to-live comes from the topic, capped by a subscription’s own default', async () => {
    const client = h.client();
    await client.createSender('work-detected').sendMessages({ body: 'ttl', applicationProperties: { role: 'input' } });
    const ttlOf = async (sub: string): Promise<number> => {
      const [m] = await client.createReceiver('work-detected', sub).peekMessages(1);
      assert.ok(m?.expiresAtUtc && m.enqueuedTimeUtc, `peeked from ${sub}`);
      return m.expiresAtUtc.getTime() - m.enqueuedTimeUtc.getTime();
    };
    assert.equal(await ttlOf('drain'), 60 * 60_000, 'topic PT1H');
    assert.equal(await ttlOf('scale'), 10 * 60_000, 'subscription PT10M');
  });

  test('an unknown entity is refused', async () => {
    const client = h.client({ maxRetries: 0 });
    await assert.rejects(client.createSender('no-such-topic').sendMessages({ body: 'x' }), /could not be found/);
    await assert.rejects(
      client.createReceiver('work-detected', 'nope').receiveMessages(1, { maxWaitTimeInMs: 200 }),
      /could not be found/,
    );
  });
});
