/**
 * `npm start` after the broker lost everything: the batch was answered 202, its WorkDetected
 * events and watchdog check went nowhere (a broker without the drain and aggregate
 * subscriptions, then a fresh broker), and the host was killed. On restart the host's own
 * start-up recovery reads the open-batch index in Storage and finishes the batch, with no
 * event from Service Bus and no timer tick.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { type Azurite, startAzurite } from '../../tools/devstack/azurite';
import { loadEntitiesConfig } from '../../tools/devstack/servicebus/config';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { expectedReport } from '../../tools/testkit/oracle';
import { type BrokerHarness, startTestBroker } from '../support/broker';
import { type HostProcess, startHostProcess } from '../support/host-process';
import { uniquePrefix } from '../support/storage';

let azurite: Azurite;
const brokers: BrokerHarness[] = [];
const hosts: HostProcess[] = [];

before(async () => {
  azurite = await startAzurite();
});

after(async () => {
  for (const h of hosts) await h.kill();
  for (const b of brokers) await b.close();
  await azurite?.stop();
});

async function waitFor<T>(
  what: string,
  timeoutMs: number,
  host: HostProcess,
  probe: () => Promise<T | undefined>,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let i = 0; Date.now() < deadline && i < 1000; i++) {
    const v = await probe();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(
    `timed out after ${timeoutMs} ms waiting for ${what}\n--- host output ---\n${host.output().slice(-3000)}`,
  );
}

describe('restart after lost events', () => {
  test('the open-batch index lets a restarted host finish a batch whose every event was lost', async (t) => {
    const full = loadEntitiesConfig();
    // Broker one: the topic exists, but nothing subscribes to drains or aggregates. Every event is lost.
    const deaf = await startTestBroker({
      entities: {
        ...full,
        topics: (full.topics ?? []).map((tp) => ({
          ...tp,
          subscriptions: tp.subscriptions.filter((s) => s.name === 'scale'),
        })),
      },
    });
    brokers.push(deaf);
    const env = {
      StorageConnection: azurite.connectionString,
      PUSHDRAIN_NAME_PREFIX: uniquePrefix(),
      PUSHDRAIN_CHUNK_SIZE: '200',
      PUSHDRAIN_SWEEP_SCHEDULE: '0 0 0 1 1 *', // never, in this test: only start-up recovery may act
    };
    const first = await startHostProcess({ ...env, ServiceBusConnection: deaf.broker.connectionString });
    hosts.push(first);
    const txns = generate(900, 501, 25);
    const res = await fetch(`${first.base}/api/batches`, {
      method: 'POST',
      body: toNdjson(txns),
      headers: { 'Content-Type': 'application/x-ndjson' },
    });
    assert.equal(res.status, 202, await res.clone().text());
    const { batchId } = (await res.json()) as { batchId: string };
    await new Promise((r) => setTimeout(r, 1500));
    const stuck = (await (await fetch(`${first.base}/api/batches/${batchId}`)).json()) as { status: string };
    assert.equal(stuck.status, 'accepted', 'with every event lost, nothing drains');
    await first.kill();
    await deaf.close(); // and the broker's messages (the scheduled watchdog check too) die with it

    const fresh = await startTestBroker();
    brokers.push(fresh);
    const t0 = Date.now();
    const second = await startHostProcess({ ...env, ServiceBusConnection: fresh.broker.connectionString });
    hosts.push(second);
    await waitFor(`batch ${batchId} completed`, 60_000, second, async () => {
      const body = (await (await fetch(`${second.base}/api/batches/${batchId}`)).json()) as { status: string };
      assert.notEqual(body.status, 'failed');
      return body.status === 'completed' ? true : undefined;
    });
    const restartToDone = Date.now() - t0;
    assert.match(second.output(), new RegExp(`Recovery: 1 open batch\\(es\\) \\(${batchId} repaired\\)`));
    const report = (await (await fetch(`${second.base}/api/batches/${batchId}/report`)).json()) as {
      rows: unknown[];
      totals: unknown[];
    };
    const expected = expectedReport(txns);
    assert.deepEqual(report.rows, expected.rows);
    assert.deepEqual(report.totals, expected.totals);
    t.diagnostic(`restart to completion: ${restartToDone} ms (host start included)`);
  });
});
