/**
 * The real Functions queue trigger's figures (scenarios/webjobs-peer.ts) beside its port's
 * (design `functions-queue` in the idle, wake and trickle scenarios), and the port's error
 * against it: (port − real) ÷ real.
 */
import type { IdleFigures, LatencyFigures, TrickleFigures } from './analyze';
import type { PeerMiss, PeerResult } from './scenarios/webjobs-peer';
import { INVOKE_TIMEOUT_MS } from './scenarios/webjobs-peer';
import { summarize } from './stats';

export interface PeerFigures {
  queues: number;
  buildSeconds: number;
  /** Median over queues of the time to reach maxPollingInterval; queues that did not reach it within the bound. */
  settleSeconds: number;
  settleMissed: number;
  idlePerQueueHour: Record<string, number>;
  wake: { trials: number; p50Ms: number; p90Ms: number };
  trickle: { messages: number; perMessage: Record<string, number>; p50Ms: number; p95Ms: number };
  /** Messages not run within the bound, left out of the latencies above, each with what the wire showed. */
  missed: PeerMiss[];
}

const HOUR = 3_600_000;

function quantile(values: readonly number[], q: number): number {
  const s = [...values].sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
}

const scale = (m: Record<string, number>, k: number): Record<string, number> =>
  Object.fromEntries(Object.entries(m).map(([op, n]) => [op, n * k]));

export function peerFigures(r: PeerResult): PeerFigures {
  const settled = r.settleMs.filter((s): s is number => s !== undefined);
  return {
    queues: r.queues,
    buildSeconds: r.buildMs / 1000,
    settleSeconds: summarize(settled).median / 1000,
    settleMissed: r.settleMs.length - settled.length,
    idlePerQueueHour: scale(r.idle, HOUR / r.idleWindowMs / r.queues),
    wake: { trials: r.wakeMs.length, p50Ms: quantile(r.wakeMs, 0.5), p90Ms: quantile(r.wakeMs, 0.9) },
    trickle: {
      messages: r.trickle.messages,
      perMessage: scale(r.trickle.storage, 1 / r.trickle.messages),
      p50Ms: quantile(r.trickle.latencyMs, 0.5),
      p95Ms: quantile(r.trickle.latencyMs, 0.95),
    },
    missed: r.missed,
  };
}

const num = (n: number | undefined, digits = 0): string =>
  n !== undefined && Number.isFinite(n)
    ? n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
    : 'n/a';
const error = (port: number | undefined, real: number): string =>
  port === undefined || !Number.isFinite(port) || real === 0
    ? 'n/a'
    : `${port >= real ? '+' : ''}${num(((port - real) / real) * 100)} %`;

/** Markdown rows: the real trigger, the port, and the port's error, for what both measure. */
export function renderPeerSection(
  p: PeerFigures,
  port: { idle?: IdleFigures; wake?: LatencyFigures; trickle?: TrickleFigures },
): string[] {
  const idle = port.idle?.perDesign['functions-queue'];
  const portIdle = idle && port.idle ? idle.perHour.median / port.idle.queuesPerApp : undefined;
  const portWake = port.wake?.perDesign['functions-queue']?.p50.median;
  const tr = port.trickle?.perDesign['functions-queue'];
  // A 1,000-transaction batch is two queue messages for the port (its pointer, chunkSize 2,000,
  // and its result), one for the peer, whose function writes nothing: so the port's per message.
  const portQueueOps = tr
    ? (['queue.get', 'queue.delete', 'queue.update'] as const).reduce(
        (a, op) => a + (tr.byOperation[op]?.median ?? 0),
        0,
      ) / 2
    : undefined;
  const realQueueOps = (['queue.get', 'queue.delete', 'queue.update'] as const).reduce(
    (a, op) => a + (p.trickle.perMessage[op] ?? 0),
    0,
  );
  const byOp = (m: Record<string, number>): string =>
    Object.entries(m)
      .filter(([op]) => op !== 'total')
      .sort(([, a], [, b]) => b - a)
      .map(([op, n]) => `${op} ${num(n, 1)}`)
      .join(', ');
  return [
    '### The real Functions queue trigger beside its port',
    '',
    `The WebJobs SDK host (Microsoft.Azure.WebJobs 3.0, Storage Queues extension 5.3.10; tools/bench/peers/webjobs-queue-trigger) with the host's queue defaults (batchSize 16, newBatchThreshold 8, maxPollingInterval 1 min, visibilityTimeout 0, maxDequeueCount 5), ${p.queues} queues, counted at the wire by a proxy in front of Azurite. Its back-off reached maxPollingInterval ${num(p.settleSeconds)} s (median over queues) after its first poll${p.settleMissed > 0 ? ` (${p.settleMissed} queues not within the bound)` : ''}. The port is the \`functions-queue\` design above.`,
    '',
    '| figure | real trigger | port | port error |',
    '|---|---|---|---|',
    `| idle storage tx per queue-hour | ${num(p.idlePerQueueHour.total, 1)} | ${num(portIdle, 1)} | ${error(portIdle, p.idlePerQueueHour.total ?? 0)} |`,
    `| wake after idle, p50 (ms) | ${num(p.wake.p50Ms)} (${p.wake.trials} trials, p90 ${num(p.wake.p90Ms)}) | ${num(portWake)} | ${error(portWake, p.wake.p50Ms)} |`,
    `| trickle queue tx (get, delete, update) per message | ${num(realQueueOps, 1)} | ${num(portQueueOps, 1)} | ${error(portQueueOps, realQueueOps)} |`,
    `| trickle put → run, p50 (ms) | ${num(p.trickle.p50Ms)} (p95 ${num(p.trickle.p95Ms)}) | — | — |`,
    '',
    ...(p.missed.length > 0
      ? [
          `Not run within ${num(INVOKE_TIMEOUT_MS / 1000)} s, and left out of the latencies: ${p.missed.map((m) => `${m.phase} ${m.queue} (${m.why})`).join('; ')}.`,
          '',
        ]
      : []),
    `Idle by operation (per queue-hour): ${byOp(p.idlePerQueueHour) || 'none'}. Trickle by operation (per message): ${byOp(p.trickle.perMessage)}. The port's trickle figure is its queue operations per 1,000 transactions halved (a pointer and a result per batch); its latency is submit-to-report of a whole batch (above), so it is not set beside the peer's, whose functions do no work.`,
  ];
}
