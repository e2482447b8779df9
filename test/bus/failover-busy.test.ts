/**
 * ServerBusy over the wire: the namespace throttles, the publisher waits at least 10 s before it
 * tries that entity again, and it never fails over, even with a failover interval of 0. In a file
 * of its own: the 10 s wait is the behaviour under test, and it runs alongside other files.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { TOPIC } from '../../shared/names';
import { PUBLISH_RETRY } from '../../shared/notify/service-bus-publisher';
import { SERVER_BUSY_WAIT_MS } from '../../shared/retry/transient';
import { provisionStorage } from '../../tools/devstack/provision-storage';
import { composedApp } from '../support/composed-app';
import { type PairedBrokers, startPairedBrokers } from '../support/paired-brokers';
import { quietLog, testSettings, useStorage } from '../support/storage';

useStorage();
let pair: PairedBrokers;
before(async () => {
  pair = await startPairedBrokers();
});
after(async () => {
  await pair?.close();
});

test('ServerBusy: a wait of at least 10 s before the retry, and no failover (interval 0)', async (t) => {
  const { app, parts } = composedApp(testSettings(pair.env({ failoverIntervalMs: 0, pingIntervalMs: 200 })), {
    log: quietLog,
  });
  try {
    await provisionStorage(parts.settings);
    const queue = parts.names.inputQueue(0);
    await parts.notifier.wake([{ queue }]); // connect first, so the timing below is the wait alone
    const before = pair.primary.broker.stats();
    // Every attempt the SDK makes (its own retries included) is refused once.
    const refusals = PUBLISH_RETRY.maxRetries + 1;
    pair.primary.broker.faults.serverBusy(refusals);
    const started = Date.now();
    await parts.notifier.wake([{ queue }]);
    const elapsed = Date.now() - started;
    const after = pair.primary.broker.stats();
    assert.equal(after.serverBusy - before.serverBusy, refusals, 'the SDK tried and was refused');
    assert.equal(after.messagesIn - before.messagesIn, 1, 'the retry after the wait was accepted by the primary');
    assert.ok(elapsed >= SERVER_BUSY_WAIT_MS, `the retry waited ${elapsed} ms, at least ${SERVER_BUSY_WAIT_MS} ms`);
    assert.equal(pair.secondary.broker.stats().messagesIn, 0, 'nothing went to the secondary');
    assert.equal(app.health().serviceBus?.entities[TOPIC]?.state, 'healthy', 'ServerBusy never moves the state');
    t.diagnostic(`ServerBusy: ${refusals} refusals, then accepted ${elapsed} ms after the first attempt`);
  } finally {
    await app.close();
  }
});
