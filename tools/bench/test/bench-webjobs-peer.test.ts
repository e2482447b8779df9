/**
 * The bench's real-trigger peer: the counting proxy against real Azurite, the settle rule and the
 * figures (pure), and the WebJobs SDK host itself, which must run a message put on its queue.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';

import { QueueServiceClient } from '@azure/storage-queue';

import { dotnetSkip } from '../../../test/support/dotnet';
import { waitFor } from '../../../test/support/poll';
import { type Azurite, startAzurite } from '../../devstack/azurite';
import { peerFigures, renderPeerSection } from '../peer-figures';
import { settleOf } from '../scenarios/webjobs-peer';
import { type CountingProxy, startCountingProxy } from '../support/counting-proxy';
import { buildPeer, PEER_QUEUES, startPeer } from '../support/webjobs-peer';

describe('bench: the real Functions queue trigger peer', () => {
  let azurite: Azurite;
  let proxy: CountingProxy;

  before(async () => {
    azurite = await startAzurite();
    proxy = await startCountingProxy(azurite);
  });

  after(async () => {
    await proxy?.close();
    await azurite?.stop();
  });

  test('the counting proxy forwards to Azurite and counts each request by operation', async () => {
    const name = `count-${randomUUID().slice(0, 8)}`;
    const queue = QueueServiceClient.fromConnectionString(proxy.connectionString).getQueueClient(name);
    const before = proxy.snapshot();
    await queue.create();
    await queue.sendMessage('one');
    const [got] = (await queue.receiveMessages({ numberOfMessages: 1 })).receivedMessageItems;
    assert.equal(got?.messageText, 'one');
    await queue.deleteMessage(got.messageId, got.popReceipt);
    const after = proxy.snapshot();
    const delta = (op: string): number => (after[op] ?? 0) - (before[op] ?? 0);
    assert.deepEqual(
      [delta('queue.create'), delta('queue.put'), delta('queue.get'), delta('queue.delete'), delta('total')],
      [1, 1, 1, 1, 4],
    );
    assert.equal(proxy.receives().get(name)?.length, 1);
  });

  test('settle is the time to the first poll gap at the 60 s cap; figures are per queue-hour and per message', () => {
    assert.equal(settleOf([0, 100, 300, 25_000, 80_000]), 25_000);
    assert.equal(settleOf([0, 100, 300, 25_000]), undefined);
    const f = peerFigures({
      buildMs: 1_000,
      queues: 5,
      settleMs: [50_000, 100_000, undefined],
      idleWindowMs: 180_000,
      idle: { 'queue.get': 15, total: 15 },
      wakeMs: [10, 20, 30, 40],
      trickle: {
        messages: 4,
        windowMs: 32_000,
        storage: { 'queue.get': 20, 'queue.delete': 4, total: 24 },
        latencyMs: [5, 6, 7, 8],
      },
      missed: [{ phase: 'wake', queue: 'work-0', id: 'm1', why: '2 polls since the put; still visible (never taken)' }],
    });
    assert.equal(f.idlePerQueueHour.total, 60);
    assert.equal(f.settleSeconds, 75);
    assert.equal(f.settleMissed, 1);
    assert.equal(f.wake.p50Ms, 30);
    assert.equal(f.trickle.perMessage['queue.delete'], 1);
    // A miss stays out of the latencies, and the section says which message and what the wire showed.
    assert.equal(f.wake.trials, 4);
    const section = renderPeerSection(f, {}).join('\n');
    assert.match(section, /Not run within 150 s.*wake work-0 \(2 polls since the put; still visible \(never taken\)\)/);
  });

  test(
    'the WebJobs SDK host runs a message put on one of its queues',
    { skip: dotnetSkip(), timeout: 10 * 60_000 },
    async () => {
      buildPeer();
      const prefix = `peer-${randomUUID().slice(0, 8)}-`;
      const admin = QueueServiceClient.fromConnectionString(azurite.connectionString);
      await Promise.all(PEER_QUEUES.map((q) => admin.createQueue(`${prefix}${q}`)));
      const peer = await startPeer({ connectionString: proxy.connectionString, prefix });
      try {
        const put = await admin.getQueueClient(`${prefix}work-2`).sendMessage(Buffer.from('{}').toString('base64'));
        // A fresh host polls every queue within its first seconds (the back-off starts at 100 ms).
        assert.ok(
          await waitFor(() => peer.invocations().some((i) => i.id === put.messageId), 30_000),
          `no invocation within 30 s: ${JSON.stringify(peer.invocations())}`,
        );
        const run = peer.invocations().find((i) => i.id === put.messageId);
        assert.equal(run?.queue, 'work-2');
        assert.ok((proxy.receives().get(`${prefix}work-2`)?.length ?? 0) >= 1, 'its receives went through the proxy');
      } finally {
        await peer.stop();
      }
    },
  );
});
