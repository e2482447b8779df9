/**
 * The secondary broker `npm start -- --secondary` runs keeps a journal as the primary does: a
 * message in a backlog queue (what the primary could not take) survives SIGKILL of its process
 * and a restart on the same folder. In memory it would not, which the last test shows, so the
 * first one can fail.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, describe, test } from 'node:test';

import { ServiceBusClient, type ServiceBusReceivedMessage } from '@azure/service-bus';

import { backlogQueues } from '../../../shared/names';
import { type BrokerProcess, startBrokerProcess } from './support/broker-process';

const dirs: string[] = [];
const brokers: BrokerProcess[] = [];
const clients: ServiceBusClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close().catch(() => undefined);
  for (const b of brokers.splice(0)) await b.kill();
});
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function secondary(dataDir: string): Promise<BrokerProcess> {
  const b = await startBrokerProcess(dataDir, 'secondary');
  brokers.push(b);
  return b;
}

function client(b: BrokerProcess): ServiceBusClient {
  const c = new ServiceBusClient(b.connectionString, {
    retryOptions: { retryDelayInMs: 100, maxRetryDelayInMs: 200, maxRetries: 1, timeoutInMs: 5_000 },
  });
  clients.push(c);
  return c;
}

const [BACKLOG] = backlogQueues(1) as [string];

/** Sends one message to the backlog queue, SIGKILLs the broker, restarts it and receives what is there. */
async function sendKillRestart(dataDir: string): Promise<{ bodies: unknown[]; output: string }> {
  const b = await secondary(dataDir);
  await client(b)
    .createSender(BACKLOG)
    .sendMessages({
      body: { kind: 'WorkDetected', queueName: 'work-0' },
      messageId: 'backlogged-1',
      applicationProperties: { destination: 'work-detected' },
    });
  await b.kill();
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => undefined)));
  await b.restart();
  // A marker sent after the restart: what comes before it (FIFO) is what survived, however slow the machine.
  const c = client(b);
  await c.createSender(BACKLOG).sendMessages({ body: 'marker', messageId: 'marker' });
  const receiver = c.createReceiver(BACKLOG, { receiveMode: 'receiveAndDelete' });
  const got: ServiceBusReceivedMessage[] = [];
  for (let i = 0; i < 30 && !got.some((m) => m.messageId === 'marker'); i++)
    got.push(...(await receiver.receiveMessages(10, { maxWaitTimeInMs: 1_000 })));
  assert.equal(got.at(-1)?.messageId, 'marker', `the marker arrived last: ${b.output().slice(-2000)}`);
  const survived = got.slice(0, -1);
  return {
    bodies: survived.map((m) => ({
      messageId: m.messageId,
      body: m.body as unknown,
      destination: m.applicationProperties?.destination,
    })),
    output: b.output(),
  };
}

describe('secondary broker: its backlog queues survive SIGKILL', () => {
  test('a message sent to a backlog queue is there after kill -9 and a restart on the same folder', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-secondary-'));
    dirs.push(dir);
    const { bodies, output } = await sendKillRestart(dir);
    assert.deepEqual(
      bodies,
      [
        {
          messageId: 'backlogged-1',
          body: { kind: 'WorkDetected', queueName: 'work-0' },
          destination: 'work-detected',
        },
      ],
      output.slice(-2000),
    );
    assert.match(output, /restored 1 messages/);
  });

  test('SERVICEBUS_SECONDARY_DATA_DIR=memory keeps it in memory: the same kill loses the message', async () => {
    const { bodies } = await sendKillRestart('memory');
    assert.deepEqual(bodies, []);
  });
});
