/**
 * The real Functions queue trigger beside its port (design `functions-queue`): the WebJobs SDK
 * host (tools/bench/peers/webjobs-queue-trigger) on the bench's Azurite, through a counting proxy, one
 * [QueueTrigger] per queue the port polls, with the host's queue defaults. Each peer process
 * gets its own queues; all run side by side. In order:
 *   settle  from start until every queue's empty-poll interval has reached maxPollingInterval
 *           (a gap of at least 90% of 60 s), measured on the wire; bounded by settleMaxMs;
 *   idle    storage transactions by operation over idleWindowMs, per queue-hour;
 *   wake    one message per queue, put at a random moment within wakeSpreadMs: put response to
 *           the function's start (the port's figure ends at the receive that returns the message:
 *           the host's dispatch in between is a few ms);
 *   trickle one message every trickleGapMs, round robin over the input queues, as the port's
 *           1,000-transaction batches give one pointer each (chunkSize 2,000): storage per
 *           message and put-to-start latency.
 * The functions do no work, so only queue operations compare with the port's.
 * A message not run within INVOKE_TIMEOUT_MS is a miss: counted, explained from the wire and the
 * peer's state, and left out of the latencies, so one late message costs a datum, not the rows.
 */
import { meterDelta, type MeterSnapshot } from '../../../shared/storage/meter';
import { type CountingProxy, startCountingProxy } from '../support/counting-proxy';
import type { BenchEnv } from '../support/env';
import { sleep } from '../support/fleet';
import { buildPeer, PEER_QUEUES, startPeer, type WebJobsPeer } from '../support/webjobs-peer';

export interface PeerConfig {
  /** Peer processes side by side (each with its own five queues). */
  peers: number;
  settleMaxMs: number;
  idleWindowMs: number;
  wakeSpreadMs: number;
  trickleMessages: number;
  trickleGapMs: number;
}

/** A message the peer did not run within INVOKE_TIMEOUT_MS, and what the wire says about it. */
export interface PeerMiss {
  phase: 'wake' | 'trickle';
  queue: string;
  id: string;
  why: string;
}

export interface PeerResult {
  buildMs: number;
  queues: number;
  /** Per queue: ms from the peer's first poll to the first gap of ~maxPollingInterval (undefined: not reached). */
  settleMs: (number | undefined)[];
  idleWindowMs: number;
  idle: MeterSnapshot;
  wakeMs: number[];
  trickle: { messages: number; windowMs: number; storage: MeterSnapshot; latencyMs: number[] };
  missed: PeerMiss[];
}

const MAX_POLL_MS = 60_000;
const CAPPED_GAP_MS = 0.9 * MAX_POLL_MS;
/** 2.5 polls at the cap: a poll that is late on a loaded machine still lands within it. */
export const INVOKE_TIMEOUT_MS = 150_000;

interface Running {
  peer: WebJobsPeer;
  proxy: CountingProxy;
  startedAt: number;
}

const sum = (snaps: MeterSnapshot[]): MeterSnapshot => {
  const out: MeterSnapshot = {};
  for (const s of snaps) for (const [k, v] of Object.entries(s)) out[k] = (out[k] ?? 0) + v;
  return out;
};

/** ms from a queue's first receive to the receive that opened its first capped gap. */
export function settleOf(times: readonly number[]): number | undefined {
  for (let i = 1; i < times.length; i++)
    if (times[i]! - times[i - 1]! >= CAPPED_GAP_MS) return times[i - 1]! - times[0]!;
  return undefined;
}

async function putAndTime(
  env: BenchEnv,
  r: Running,
  queue: string,
  phase: PeerMiss['phase'],
): Promise<number | PeerMiss> {
  const name = `${r.peer.prefix}${queue}`;
  const q = env.admin.queues.getQueueClient(name);
  // The extension decodes base64 by default (the host's messageEncoding).
  const put = await q.sendMessage(Buffer.from(`{"peer":"${queue}"}`).toString('base64'));
  const putAt = Date.now();
  const deadline = putAt + INVOKE_TIMEOUT_MS;
  // Bounded by the deadline; invocations are filled in by the peer's stdout.
  while (Date.now() < deadline) {
    const hit = r.peer.invocations().find((i) => i.id === put.messageId);
    if (hit) return hit.at - putAt;
    if (r.peer.exited()) break;
    await sleep(10);
  }
  return { phase, queue, id: put.messageId, why: await diagnose(r, q, name, put.messageId, putAt) };
}

/** What the wire and the peer say about a message that was not run: polled or not, taken or not. */
async function diagnose(
  r: Running,
  q: ReturnType<BenchEnv['admin']['queues']['getQueueClient']>,
  name: string,
  id: string,
  putAt: number,
): Promise<string> {
  const polls = (r.proxy.receives().get(name) ?? []).filter((t) => t >= putAt);
  const visible = await q
    .peekMessages({ numberOfMessages: 32 })
    .then((p) => p.peekedMessageItems.some((m) => m.messageId === id))
    .catch(() => undefined);
  const parts = [
    r.peer.exited() ? `peer ${r.peer.exited()}` : 'peer running',
    polls.length === 0
      ? `no poll of ${name} since the put`
      : `${polls.length} polls since the put, the first after ${((polls[0]! - putAt) / 1000).toFixed(1)} s`,
    visible === undefined
      ? 'visibility unknown'
      : visible
        ? 'still visible (never taken)'
        : 'taken but not run (invisible: a receive whose response was lost, or a function that never started)',
  ];
  const tail = r.peer.stderrTail().trim().split('\n').slice(-3).join(' | ');
  return `${parts.join('; ')}${tail ? `; stderr: ${tail}` : ''}`;
}

export async function runWebJobsPeer(env: BenchEnv, cfg: PeerConfig, random: () => number): Promise<PeerResult> {
  const buildMs = buildPeer();
  const running: Running[] = [];
  try {
    for (let i = 0; i < cfg.peers; i++) {
      const prefix = `peer${i}-${Math.floor(random() * 1e9).toString(36)}-`;
      await Promise.all(PEER_QUEUES.map((q) => env.admin.queues.createQueue(`${prefix}${q}`)));
      const proxy = await startCountingProxy(env.azurite);
      running.push({
        peer: await startPeer({ connectionString: proxy.connectionString, prefix }),
        proxy,
        startedAt: Date.now(),
      });
    }
    const allReceives = (): (readonly number[])[] =>
      running.flatMap((r) => PEER_QUEUES.map((q) => r.proxy.receives().get(`${r.peer.prefix}${q}`) ?? []));
    const settleDeadline = Date.now() + cfg.settleMaxMs;
    // Bounded by settleMaxMs: wait until every queue has polled at the cap once.
    while (Date.now() < settleDeadline && allReceives().some((t) => settleOf(t) === undefined)) await sleep(1_000);
    const settleMs = allReceives().map(settleOf);

    const i0 = running.map((r) => r.proxy.snapshot());
    await sleep(cfg.idleWindowMs);
    const idle = sum(running.map((r, i) => meterDelta(r.proxy.snapshot(), i0[i]!)));

    const wakes = await Promise.all(
      running.flatMap((r) =>
        PEER_QUEUES.map(async (q) => {
          await sleep(random() * cfg.wakeSpreadMs);
          return putAndTime(env, r, q, 'wake');
        }),
      ),
    );
    const missed: PeerMiss[] = [];
    const record = (v: number | PeerMiss, into: number[]): void => {
      if (typeof v === 'number') into.push(v);
      else missed.push(v);
    };
    const wakeMs: number[] = [];
    for (const w of wakes) record(w, wakeMs);

    const t0 = running.map((r) => r.proxy.snapshot());
    const started = Date.now();
    const latencyMs: number[] = [];
    const inputs = PEER_QUEUES.filter((q) => q !== 'results');
    const jobs: Promise<void>[] = [];
    for (let n = 0; n < cfg.trickleMessages; n++) {
      await sleep(Math.max(0, started + n * cfg.trickleGapMs - Date.now()));
      for (const r of running)
        jobs.push(putAndTime(env, r, inputs[n % inputs.length]!, 'trickle').then((v) => record(v, latencyMs)));
    }
    await sleep(Math.max(0, started + cfg.trickleMessages * cfg.trickleGapMs - Date.now()));
    const storage = sum(running.map((r, i) => meterDelta(r.proxy.snapshot(), t0[i]!)));
    await Promise.all(jobs);
    return {
      buildMs,
      queues: running.length * PEER_QUEUES.length,
      settleMs,
      idleWindowMs: cfg.idleWindowMs,
      idle,
      wakeMs,
      trickle: {
        messages: cfg.trickleMessages * running.length,
        windowMs: cfg.trickleMessages * cfg.trickleGapMs,
        storage,
        latencyMs,
      },
      missed,
    };
  } finally {
    await Promise.all(
      running.map(async (r) => {
        await r.peer.stop();
        await r.proxy.close();
      }),
    );
  }
}
