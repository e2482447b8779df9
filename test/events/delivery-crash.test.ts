/**
 * Delivery crash test. `npm start` (dist/tools/devstack/start.js, with Storage and the broker
 * outside it, as Azure's are) has its process group SIGKILLed at seeded moments across the life of
 * a batch event: before the terminal write, between it and the first attempt, during an attempt,
 * right after a failed attempt (before or after its record and retry), and during a redrive of
 * `deliveries-poison`; then started again on the same storage. Receivers are at random up, slow,
 * answering 5xx, or down (the connection reset before any answer). Two operator webhooks (`v1`) and
 * each batch's callback (`v1a`, verified with the published keys) are checked, and the
 * `batch-events` topic through a subscription: every completed batch's event arrives at every target
 * at least once, verified. Duplicates are counted and reported, never required to be zero. For each
 * kill, how late its pending deliveries' first attempt after the restart came against their due time
 * (or the restart, when they fell due while the host was dead) is reported, not asserted: timings
 * on a shared machine are noise.
 *
 * DELIVERY_CRASH_SEED (default 7) and DELIVERY_CRASH_KILLS (default 32) soak it locally.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';

import { BlobServiceClient } from '@azure/storage-blob';
import { QueueServiceClient } from '@azure/storage-queue';
import { Webhook } from 'standardwebhooks';

import type { Manifest } from '../../shared/batch/manifest';
import { layout } from '../../shared/layout';
import { BATCH_EVENTS_TOPIC, entityNames } from '../../shared/names';
import { type Azurite, startAzurite } from '../../tools/devstack/azurite';
import { generate, rng, toNdjson } from '../../tools/testkit/generate';
import { withAuditSubscription } from '../support/audit-subscription';
import { type BrokerHarness, startTestBroker } from '../support/broker';
import { callbackKeys, verifyCallback } from '../support/callback-verifier';
import { statusOf } from '../support/crash-client';
import { type HostProcess, startHostProcess } from '../support/host-process';
import { runCli } from '../support/local-stack';
import { scratchDir } from '../support/scratch-dir';
import { uniquePrefix } from '../support/storage';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const SEED = Number(process.env.DELIVERY_CRASH_SEED ?? 7);
const KILLS = Number(process.env.DELIVERY_CRASH_KILLS ?? 32);
const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
/** Four attempts a second or two apart, then poison: redrive has work within the run. */
const SCHEDULE = '1,1,2';
/** The sweep's recovery interval: a delivery is owed by its due time plus this. */
const SWEEP_SECONDS = 5;
const ADMIN = 'any-key-works-locally';

const PHASES = [
  'before-terminal',
  'after-terminal',
  'during-attempt',
  'after-failed-attempt',
  'during-redrive',
] as const;
type Phase = (typeof PHASES)[number];
type Mode = 'up' | 'slow' | '5xx' | 'down' | 'hang';

interface Attempt {
  eventId: string;
  at: number;
  answer: number | 'reset' | 'held';
}

/** A receiver whose behaviour the test switches: it verifies every request before it answers. */
interface ChaosReceiver {
  readonly url: string;
  readonly name: string;
  mode: Mode;
  readonly attempts: Attempt[];
  /** First 2xx per event id, and how many 2xx in all (duplicates). */
  readonly delivered: Map<string, number>;
  twoXx: number;
  unverified: number;
  close(): Promise<void>;
}

async function chaosReceiver(
  name: string,
  verify: (body: string, req: IncomingMessage) => { id: string },
  r: () => number,
  path = '/hook',
): Promise<ChaosReceiver> {
  const held = new Set<ServerResponse>();
  const self: ChaosReceiver = {
    url: '',
    name,
    mode: 'up',
    attempts: [],
    delivered: new Map(),
    twoXx: 0,
    unverified: 0,
    close: async () => {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      await new Promise((res) => server.close(res));
    },
  };
  const server: Server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      let id: string;
      try {
        id = verify(Buffer.concat(parts).toString('utf8'), req).id;
      } catch {
        self.unverified++;
        res.writeHead(400).end();
        return;
      }
      const at = Date.now();
      const mode = self.mode;
      if (mode === 'down') {
        self.attempts.push({ eventId: id, at, answer: 'reset' });
        req.socket.destroy();
        return;
      }
      if (mode === 'hang') {
        self.attempts.push({ eventId: id, at, answer: 'held' });
        held.add(res);
        res.on('close', () => held.delete(res));
        return;
      }
      const status = mode === '5xx' ? [500, 502, 503][Math.floor(r() * 3)]! : 200;
      const answer = (): void => {
        self.attempts.push({ eventId: id, at, answer: status });
        if (status === 200) {
          self.twoXx++;
          if (!self.delivered.has(id)) self.delivered.set(id, Date.now());
        }
        res.writeHead(status).end();
      };
      if (mode === 'slow') setTimeout(answer, 300 + Math.floor(r() * 2000));
      else answer();
    });
  });
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', () => res()));
  (self as { url: string }).url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`;
  return self;
}

let azurite: Azurite | undefined;
let bus: BrokerHarness | undefined;
let host: HostProcess | undefined;
const receivers: ChaosReceiver[] = [];

before(async () => {
  [azurite, bus] = await Promise.all([startAzurite(), startTestBroker(withAuditSubscription())]);
});

after(async () => {
  await host?.kill();
  for (const rc of receivers) await rc.close();
  await bus?.close();
  await azurite?.stop();
});

interface Kill {
  phase: Phase;
  landed: string;
  batchId?: string;
  /** When the host was started again. */
  restartedAt: number;
  /** Deliveries pending at the kill (durable): receiver name, event id, due time. */
  owed: { receiver: ChaosReceiver; eventId: string; dueAt: number }[];
}

describe('batch event delivery across kill -9 at seeded moments', () => {
  test(`seed ${SEED}: ${KILLS} kills; every event at every target at least once`, async (t) => {
    const r = rng(SEED);
    const between = (lo: number, hi: number): number => lo + Math.floor(r() * (hi - lo));
    const wh = new Webhook(SECRET);
    let keys: string[] = [];
    const operatorVerify = (body: string, req: IncomingMessage): { id: string } =>
      wh.verify(body, req.headers as Record<string, string>) as { id: string };
    const clientVerify = (body: string, req: IncomingMessage): { id: string } =>
      verifyCallback(body, req.headers, keys, { kind: 'key' }) as { id: string };
    const [w1, w2, cb] = await Promise.all([
      chaosReceiver('webhook-1', operatorVerify, r),
      chaosReceiver('webhook-2', operatorVerify, r, '/second'),
      chaosReceiver('callback', clientVerify, r, '/client'),
    ]);
    receivers.push(w1, w2, cb);
    const prefix = uniquePrefix();
    const names = entityNames(prefix, 4);
    host = await startHostProcess(
      {
        StorageConnection: azurite!.connectionString,
        AzureWebJobsStorage: undefined,
        ServiceBusConnection: bus!.broker.connectionString,
        PUSHDRAIN_NAME_PREFIX: prefix,
        PUSHDRAIN_DATA_DIR: scratchDir('pd-delivery-crash-'),
        PUSHDRAIN_WEBHOOK_URL: `${w1.url},${w2.url}`,
        PUSHDRAIN_WEBHOOK_SECRET: SECRET,
        PUSHDRAIN_CALLBACK_ORIGINS: new URL(cb.url).origin,
        PUSHDRAIN_WEBHOOK_RETRY_SCHEDULE: SCHEDULE,
        PUSHDRAIN_SWEEP_SCHEDULE: `*/${SWEEP_SECONDS} * * * * *`,
        PUSHDRAIN_CHUNK_SIZE: '100',
        PUSHDRAIN_VISIBILITY_TIMEOUT_SECONDS: '3',
        PUSHDRAIN_STALL_SECONDS: '10',
      },
      0,
      60_000,
      { processGroup: true },
    );
    keys = await callbackKeys(host.base);
    const blobs = BlobServiceClient.fromConnectionString(azurite!.connectionString).getContainerClient(
      names.container('batches'),
    );
    const poison = QueueServiceClient.fromConnectionString(azurite!.connectionString).getQueueClient(
      names.deliveriesPoisonQueue,
    );
    const manifestOf = async (batchId: string): Promise<Manifest | undefined> => {
      const blob = blobs.getBlobClient(layout.manifest(batchId).name);
      // Azurite may end a download short while the app overwrites the same blob (the SDK then
      // says the stream drained early), where Azure serves the whole of one version: read again.
      for (let attempt = 1; ; attempt++) {
        try {
          if (!(await blob.exists())) return undefined;
          return JSON.parse((await blob.downloadToBuffer()).toString('utf8')) as Manifest;
        } catch (e) {
          if (attempt >= 5 || !/drains before getting enough data|Unexpected end of JSON/.test(String(e))) throw e;
          await sleep(50 * attempt);
        }
      }
    };
    const targetOf = (kind: string, target: string): ChaosReceiver | undefined =>
      kind === 'callback' ? cb : [w1, w2].find((w) => w.url === target);

    const batchIds: string[] = [];
    const kills: Kill[] = [];
    const submit = async (): Promise<string> => {
      const n = batchIds.length;
      const body = toNdjson(generate(between(50, 250), SEED * 1000 + n, 10));
      for (let i = 0; i < 200; i++) {
        const res = await fetch(`${host!.base}/api/batches`, {
          method: 'POST',
          body,
          headers: {
            'Content-Type': 'application/x-ndjson',
            'Idempotency-Key': `dc-${SEED}-${n}`,
            'Callback-Url': `${cb.url}/${n}?token=t${n}`,
          },
        }).catch((e: unknown) => e as Error);
        if (!(res instanceof Error) && res.status === 202) {
          const { batchId } = (await res.json()) as { batchId: string };
          batchIds.push(batchId);
          return batchId;
        }
        await sleep(200);
      }
      throw new Error('a batch was never accepted');
    };
    const randomMode = (): Mode => (['up', 'up', 'slow', '5xx', 'down'] as const)[Math.floor(r() * 5)]!;
    const redrive = (): Promise<unknown> =>
      runCli(['redrive', '--queue', 'deliveries'], { PUSHDRAIN_URL: host!.base, PUSHDRAIN_KEY: ADMIN }, 60_000).catch(
        (e: unknown) => e,
      );

    /** Kills, reads what is owed from storage, classifies where the kill landed, restarts. */
    const crash = async (phase: Phase, batchId: string | undefined, landed: string): Promise<void> => {
      const seenBefore = new Set(receivers.flatMap((rc) => rc.attempts.map((a) => `${rc.name}/${a.eventId}`)));
      await host!.kill();
      const owed: Kill['owed'] = [];
      let where = landed;
      for (const id of batchIds) {
        const m = await manifestOf(id);
        for (const e of m?.events ?? [])
          for (const d of e.deliveries) {
            const rc = targetOf(d.kind, d.target);
            if (d.state === 'pending' && rc) owed.push({ receiver: rc, eventId: e.id, dueAt: Date.parse(d.dueAt) });
          }
        if (id !== batchId) continue;
        if (!m?.completedAt) where = 'before the terminal write';
        else if (phase === 'after-terminal' || phase === 'before-terminal') {
          const tried = m.events?.some((e) => receivers.some((rc) => seenBefore.has(`${rc.name}/${e.id}`)));
          where = tried ? 'during the first attempts' : 'between the terminal write and the first attempt';
        } else if (phase === 'after-failed-attempt') {
          const recorded = m.events?.some((e) => e.deliveries.some((d) => d.attempts > 0));
          where = recorded ? 'after a failed attempt, recorded' : 'after a failed attempt, before its record';
        }
      }
      await host!.restart();
      kills.push({ phase, landed: where, restartedAt: Date.now(), owed, ...(batchId ? { batchId } : {}) });
    };

    for (let step = 0; step < KILLS; step++) {
      const phase = PHASES[step % PHASES.length]!;
      // webhook-2 stays down for the first third: its deliveries reach poison, for the redrive kills.
      for (const rc of receivers) rc.mode = randomMode();
      if (step < KILLS / 3) w2.mode = 'down';
      switch (phase) {
        case 'before-terminal': {
          const id = await submit();
          await sleep(between(0, 150));
          await crash(phase, id, 'before-terminal');
          break;
        }
        case 'after-terminal': {
          const id = await submit();
          await host.until('the batch to complete', 30_000, async () =>
            (await statusOf(host!, id))?.status === 'completed' ? true : undefined,
          );
          await crash(phase, id, 'after-terminal');
          break;
        }
        case 'during-attempt': {
          for (const rc of receivers) rc.mode = 'hang';
          const id = await submit();
          const from = receivers.map((rc) => rc.attempts.length);
          await host.until('an attempt under way', 30_000, () =>
            receivers.some((rc, i) => rc.attempts.length > from[i]!) ? true : undefined,
          );
          await sleep(between(0, 40));
          await crash(phase, id, 'during an attempt');
          for (const rc of receivers) rc.mode = randomMode();
          break;
        }
        case 'after-failed-attempt': {
          for (const rc of receivers) rc.mode = '5xx';
          const id = await submit();
          const from = receivers.map((rc) => rc.attempts.length);
          await host.until('a failed attempt', 30_000, () =>
            receivers.some((rc, i) => rc.attempts.length > from[i]!) ? true : undefined,
          );
          await sleep(between(0, 30));
          await crash(phase, id, 'after a failed attempt');
          break;
        }
        case 'during-redrive': {
          w2.mode = 'up';
          const running = redrive();
          await sleep(between(100, 600));
          await crash(phase, undefined, 'during redrive');
          await running;
          break;
        }
      }
    }

    // The end: every receiver up; redrive what is poisoned until every event is everywhere.
    for (const rc of receivers) rc.mode = 'up';
    const expected = new Map<string, string>(); // event id → batch id
    const topicIds = new Set<string>();
    const audit = bus!.client().createReceiver(BATCH_EVENTS_TOPIC, 'audit', { receiveMode: 'receiveAndDelete' });
    const missing = (): string[] => {
      const out: string[] = [];
      for (const [eventId, batchId] of expected) {
        for (const rc of receivers) if (!rc.delivered.has(eventId)) out.push(`${batchId} ${eventId} at ${rc.name}`);
        if (!topicIds.has(eventId)) out.push(`${batchId} ${eventId} on the topic`);
      }
      return out;
    };
    await host.until('every event at every target', 150_000, async () => {
      for (const id of batchIds) {
        const m = await manifestOf(id);
        if (m?.state !== 'completed' && m?.state !== 'failed') return undefined;
        for (const e of m.events ?? []) expected.set(e.id, id);
      }
      for (const msg of await audit.receiveMessages(50, { maxWaitTimeInMs: 200 }))
        topicIds.add(String(msg.applicationProperties?.['cloudEvents:id'] ?? (msg.body as { id?: string }).id));
      if ((await poison.peekMessages({ numberOfMessages: 1 })).peekedMessageItems.length > 0) await redrive();
      return missing().length === 0 ? true : undefined;
    });
    await audit.close();
    assert.equal(expected.size, batchIds.length, 'one event per batch');
    assert.deepEqual(missing(), []);
    for (const rc of receivers) assert.equal(rc.unverified, 0, `${rc.name}: every request verified`);

    // How late each kill's owed deliveries were: first attempt after the restart against max(due, restart).
    const lateness: string[] = [];
    const lates: number[] = [];
    for (const [i, k] of kills.entries()) {
      const worst = k.owed
        .map((o) => {
          const first = o.receiver.attempts.find((a) => a.eventId === o.eventId && a.at >= k.restartedAt);
          return first ? first.at - Math.max(o.dueAt, k.restartedAt) : undefined;
        })
        .filter((ms): ms is number => ms !== undefined);
      const late = worst.length > 0 ? Math.max(...worst) : undefined;
      if (late !== undefined) lates.push(late);
      lateness.push(
        `#${i + 1} ${k.landed}: ${k.owed.length} owed, ${late === undefined ? 'none attempted after it (settled by an earlier incarnation or a later kill)' : `latest ${late} ms past due`}`,
      );
    }
    const duplicates = receivers.map((rc) => `${rc.name} ${rc.twoXx - rc.delivered.size}`).join(', ');
    const landed = new Map<string, number>();
    for (const k of kills) landed.set(k.landed, (landed.get(k.landed) ?? 0) + 1);
    lates.sort((a, b) => a - b);
    t.diagnostic(
      `${host.kills} kills (${[...landed].map(([k, n]) => `${k} ${n}`).join(', ')}), ${batchIds.length} batches; ` +
        `duplicates (2xx beyond the first per event): ${duplicates}; ` +
        `lateness past due: median ${lates[Math.floor(lates.length / 2)] ?? '-'} ms, max ${lates.at(-1) ?? '-'} ms (recovery interval ${SWEEP_SECONDS} s)`,
    );
    for (const line of lateness) t.diagnostic(line);
    assert.ok(host.kills >= 30, 'at least 30 seeded kills');
    assert.equal(await host.stop(), 0, 'the host stopped cleanly at the end');
    host = undefined;
  });
});
