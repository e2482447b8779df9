/**
 * Scenario 8, what durability costs the development broker: the same sends and receive+complete
 * through the official SDK against an in-memory broker and a durable one (journal with fsync,
 * group commit, compaction), each in a fresh child process, paired within a repetition. The
 * journal compacts at 256 KiB here (4 MiB by default), so compactions happen and are paid for.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { ServiceBusClient } from '@azure/service-bus';

import { startBroker } from '../../devstack/servicebus/broker';
import type { JournalStats } from '../../devstack/servicebus/journal';
import { ratioSummary, summarize, type Summary } from '../stats';

export interface BrokerConfig {
  reps: number;
  messages: number;
  /** Concurrent senders for the grouped send; the other send uses one. */
  senders: number;
  receivers: number;
}

export interface BrokerJob extends Omit<BrokerConfig, 'reps'> {
  kind: 'broker';
  durable: boolean;
}

export interface BrokerRun {
  durable: boolean;
  /** Messages per second: one sender awaiting each send; `senders` of them; receive + complete. */
  sendOnePerSec: number;
  sendManyPerSec: number;
  receiveCompletePerSec: number;
  journal?: JournalStats;
}

const COMPACT_AT_BYTES = 256 * 1024;
const QUEUE = 'bench';
const BODY = { event: 'WorkDetected', queue: 'work-0', payloadSize: 2000, role: 'input', pad: 'x'.repeat(120) };

export async function brokerJob(job: BrokerJob): Promise<BrokerRun> {
  const dir = job.durable ? mkdtempSync(join(tmpdir(), 'bench-sb-')) : undefined;
  const broker = await startBroker({
    entities: { queues: [{ name: QUEUE, lockDuration: 'PT1M', maxDeliveryCount: 10 }] },
    dataDir: dir,
    compactAtBytes: COMPACT_AT_BYTES,
    notice: () => undefined,
  });
  const client = new ServiceBusClient(broker.connectionString, {
    retryOptions: { retryDelayInMs: 100, maxRetries: 3 },
  });
  try {
    const one = Math.max(1, Math.floor(job.messages / 10));
    const sendOnePerSec = await rate(one, () => sendAll(client, one, 1));
    const sendManyPerSec = await rate(job.messages, () => sendAll(client, job.messages, job.senders));
    const receiveCompletePerSec = await rate(one + job.messages, () =>
      receiveAll(client, one + job.messages, job.receivers),
    );
    return { durable: job.durable, sendOnePerSec, sendManyPerSec, receiveCompletePerSec, journal: broker.journal() };
  } finally {
    await client.close();
    await broker.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}

async function rate(count: number, work: () => Promise<void>): Promise<number> {
  const t0 = performance.now();
  await work();
  return (count * 1000) / (performance.now() - t0);
}

async function sendAll(client: ServiceBusClient, count: number, senders: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: senders }, async () => {
      const sender = client.createSender(QUEUE);
      for (let i = next++; i < count; i = next++) await sender.sendMessages({ body: BODY, messageId: `m-${i}` });
      await sender.close();
    }),
  );
}

async function receiveAll(client: ServiceBusClient, count: number, receivers: number): Promise<void> {
  let done = 0;
  const deadline = Date.now() + 120_000;
  await Promise.all(
    Array.from({ length: receivers }, async () => {
      const receiver = client.createReceiver(QUEUE, { maxAutoLockRenewalDurationInMs: 0 });
      while (done < count && Date.now() < deadline) {
        const got = await receiver.receiveMessages(50, { maxWaitTimeInMs: 200 });
        await Promise.all(got.map((m) => receiver.completeMessage(m)));
        done += got.length;
      }
      await receiver.close();
    }),
  );
  if (done < count) throw new Error(`broker bench: received ${done} of ${count} within 120 s`);
}

export interface BrokerFigures {
  messages: number;
  memory: { sendOne: Summary; sendMany: Summary; receiveComplete: Summary };
  durable: { sendOne: Summary; sendMany: Summary; receiveComplete: Summary };
  /** Durable ÷ in-memory, paired by repetition. */
  ratio: { sendOne: Summary | undefined; sendMany: Summary | undefined; receiveComplete: Summary | undefined };
  /** Journal of the durable runs: operations per fsync, compactions, bytes. */
  journal: { opsPerCommit: Summary; compactions: Summary; writtenKb: Summary; finalSegmentKb: Summary };
}

export function brokerFigures(runs: readonly BrokerRun[], messages: number): BrokerFigures {
  const mem = runs.filter((r) => !r.durable);
  const dur = runs.filter((r) => r.durable);
  const side = (rs: readonly BrokerRun[]): BrokerFigures['memory'] => ({
    sendOne: summarize(rs.map((r) => r.sendOnePerSec)),
    sendMany: summarize(rs.map((r) => r.sendManyPerSec)),
    receiveComplete: summarize(rs.map((r) => r.receiveCompletePerSec)),
  });
  const j = dur.map((r) => r.journal).filter((s): s is JournalStats => s !== undefined);
  return {
    messages,
    memory: side(mem),
    durable: side(dur),
    ratio: {
      sendOne: ratioSummary(
        dur.map((r) => r.sendOnePerSec),
        mem.map((r) => r.sendOnePerSec),
      ),
      sendMany: ratioSummary(
        dur.map((r) => r.sendManyPerSec),
        mem.map((r) => r.sendManyPerSec),
      ),
      receiveComplete: ratioSummary(
        dur.map((r) => r.receiveCompletePerSec),
        mem.map((r) => r.receiveCompletePerSec),
      ),
    },
    journal: {
      opsPerCommit: summarize(j.map((s) => s.operations / Math.max(1, s.commits))),
      compactions: summarize(j.map((s) => s.compactions)),
      writtenKb: summarize(j.map((s) => s.written / 1024)),
      finalSegmentKb: summarize(j.map((s) => s.bytes / 1024)),
    },
  };
}
