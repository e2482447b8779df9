/**
 * Scenario 12, batch events to a webhook. One pushdrain app (as deployed, with the `batch-events`
 * topic) has PUSHDRAIN_WEBHOOK_URL pointing at a receiver on 127.0.0.1 in this process, written as
 * README tells a user to write one (it verifies every request with `standardwebhooks`). After an
 * untimed warm-up batch, N small batches are submitted one at a time, each once the previous
 * one's event has arrived, alternately after a short random gap (the app's connection to the
 * receiver is still kept) and after `coldGapMs` (past the kept connection's idle timeout, as for
 * batches that come minutes apart), and each is measured from completion (the
 * event's `time`, which is the manifest's `completedAt`, stamped before the terminal write) to
 * the moment the receiver has the whole request (its own clock: same machine, same clock).
 *
 * Then the idle cost with webhooks configured: once the app's meter has gone quiet, a window of
 * W seconds, its storage transactions (queue and blob apart) and Service Bus messages sent,
 * scaled to an hour. The sweep timer's run is the idle scenario's business; it lists the same
 * open-batch index with or without webhooks.
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

import { Webhook } from 'standardwebhooks';

import { meterDelta, type MeterSnapshot } from '../../../shared/storage/meter';
import { batchBody } from '../support/data';
import type { BenchEnv } from '../support/env';
import { sleep, startFleetApp, stopFleetApp, untilQuiet } from '../support/fleet';

export interface WebhooksConfig {
  reps: number;
  /** Batches per repetition, each measured. */
  batches: number;
  batchSize: number;
  /** A random pause of this much between one event's arrival and the next submission. */
  gapMinMs: number;
  gapMaxMs: number;
  /** Every other batch waits this long instead: longer than a kept connection lives idle. */
  coldGapMs: number;
  /** The idle window, after the app's meter went quiet for `quietMs`. */
  idleWindowMs: number;
  quietMs: number;
}

interface WebhookTrial {
  rep: number;
  batchId: string;
  /** completedAt → the receiver had the whole request. */
  latencyMs: number;
  /** Requests for this event (retries, duplicates): 1 when the first attempt landed. */
  requests: number;
  /** Submitted after the cold gap: the app had no connection to the receiver left. */
  cold: boolean;
}

export interface WebhooksRun {
  rep: number;
  trials: WebhookTrial[];
  /** Requests that failed verification (must be 0). */
  unverified: number;
  idle: { windowMs: number; storage: MeterSnapshot; serviceBusSent: number };
}

const TIMEOUT_MS = 120_000;
const SEED_BASE = 12_000;

interface Arrival {
  at: number;
  time: string;
  subject: string;
}

/** A receiver on 127.0.0.1 that verifies each request and notes when it had all of it. */
async function startReceiver(secret: string): Promise<{
  url: string;
  arrivals: Map<string, Arrival>;
  requests: Map<string, number>;
  unverified: () => number;
  next: (batchId: string, timeoutMs: number) => Promise<Arrival>;
  close: () => Promise<void>;
}> {
  const wh = new Webhook(secret);
  const arrivals = new Map<string, Arrival>();
  const requests = new Map<string, number>();
  const waiting = new Map<string, (a: Arrival) => void>();
  let unverified = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      const body = Buffer.concat(chunks).toString('utf8');
      let event: { subject: string; time: string };
      try {
        event = wh.verify(body, req.headers as Record<string, string>) as typeof event;
      } catch {
        unverified++;
        res.writeHead(400).end();
        return;
      }
      res.writeHead(204).end();
      requests.set(event.subject, (requests.get(event.subject) ?? 0) + 1);
      if (arrivals.has(event.subject)) return;
      const arrival = { at, time: event.time, subject: event.subject };
      arrivals.set(event.subject, arrival);
      waiting.get(event.subject)?.(arrival);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks/pushdrain`,
    arrivals,
    requests,
    unverified: () => unverified,
    next: (batchId, timeoutMs) => {
      const got = arrivals.get(batchId);
      if (got) return Promise.resolve(got);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiting.delete(batchId);
          reject(new Error(`no webhook for batch ${batchId} within ${timeoutMs} ms`));
        }, timeoutMs);
        waiting.set(batchId, (a) => {
          clearTimeout(timer);
          waiting.delete(batchId);
          resolve(a);
        });
      });
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

export async function runWebhooks(env: BenchEnv, cfg: WebhooksConfig, random: () => number): Promise<WebhooksRun[]> {
  const out: WebhooksRun[] = [];
  for (let rep = 0; rep < cfg.reps; rep++) {
    const secret = `whsec_${randomBytes(24).toString('base64')}`;
    const receiver = await startReceiver(secret);
    const f = await startFleetApp(env, 'pushdrain', {
      random,
      settings: { PUSHDRAIN_WEBHOOK_URL: receiver.url, PUSHDRAIN_WEBHOOK_SECRET: secret },
    });
    try {
      // Warm-up: connections, JIT, the first drain and the first delivery stay out of the figures.
      const warm = await f.app.submit(batchBody({ count: cfg.batchSize, seed: SEED_BASE - 1 }));
      await receiver.next(warm, TIMEOUT_MS);
      const trials: WebhookTrial[] = [];
      for (let i = 0; i < cfg.batches; i++) {
        const cold = i % 2 === 1;
        await sleep(cold ? cfg.coldGapMs : cfg.gapMinMs + random() * (cfg.gapMaxMs - cfg.gapMinMs));
        const batchId = await f.app.submit(batchBody({ count: cfg.batchSize, seed: SEED_BASE + i }));
        const got = await receiver.next(batchId, TIMEOUT_MS);
        trials.push({ rep, batchId, latencyMs: got.at - Date.parse(got.time), requests: 0, cold });
      }
      // Every event's deliveries have settled once the meter is still (the last one removes the open marker).
      await untilQuiet(f.app, cfg.quietMs, 60_000);
      for (const t of trials) t.requests = receiver.requests.get(t.batchId) ?? 0;
      const before = f.app.meter.snapshot();
      const sent0 = f.app.sent();
      const t0 = Date.now();
      await sleep(cfg.idleWindowMs);
      out.push({
        rep,
        trials,
        unverified: receiver.unverified(),
        idle: {
          windowMs: Date.now() - t0,
          storage: meterDelta(f.app.meter.snapshot(), before),
          serviceBusSent: f.app.sent() - sent0,
        },
      });
    } finally {
      await stopFleetApp(env, f);
      await receiver.close();
    }
  }
  return out;
}
