/** The scale-out scenario's tables: each instance's share, the controller's decisions, instances over time. */
import type { ScaleOutRun } from './scenarios/scale-out';

const n = (v: number): string => v.toLocaleString('en-US');
const s = (ms: number | undefined): string => (ms === undefined ? '—' : (ms / 1000).toFixed(1));

export function scaleOutSection(r: ScaleOutRun): string {
  const input = r.shares.reduce((a, x) => a + x.input, 0);
  const lines = [
    `${n(r.transactions)} transactions in ${r.batches} batches (${n(r.chunks)} chunks of ${r.settings.chunkSize}), ${r.settings.partitions} partitions, ${r.settings.drainSlots} drain slots, a drain per ${r.settings.messagesPerDrain} queued messages, at most ${r.settings.inFlightPerDrain} in flight per drain; controller target ${r.targetPerInstance} per instance (host.json maxConcurrentCalls). Submitted in ${s(r.submitMs)} s with no instance running: a backlog of ${n(r.backlog.transactions)} transactions in ${n(r.backlog.inputMessages)} queue messages behind ${r.backlog.activeEvents} events. From the controller's start (t = 0): last report at ${s(r.elapsedMs)} s, peak ${r.peakInstances} instances; reports equal to the oracle: ${r.reportsExact} of ${r.batches}.`,
    '',
    `Input messages processed in all: ${n(input)} for ${n(r.chunks)} chunks${input > r.chunks ? ` (${n(input - r.chunks)} processed twice: redelivered after their visibility timeout, or the delete of a finished message came too late; the map step and the fold are idempotent)` : ''}.`,
    '',
    `After the drain: ${r.after.instances} instances (back to zero ${s(r.after.scaledToZeroMs)} s after the last report); instance starts after the last report: ${r.after.startsAfterLastReport ?? '—'}, later instances that processed no message: ${r.after.startsForNothing ?? '—'}; active messages ${Object.entries(
      r.after.subscriptions,
    )
      .map(([k, v]) => `${k} ${v}`)
      .join(
        ', ',
      )}; ${r.after.scheduledOnTopic} scheduled on the topic; ${n(r.after.queuedMessages)} messages left in the Storage queues.`,
    '',
    '| instance | started (s) | stopped (s) | exit | input messages | share of input | result messages | fan-out events published |',
    '|---|---|---|---|---|---|---|---|',
    ...r.shares.map(
      (x) =>
        `| ${x.name} | ${s(x.startedAtMs)} | ${s(x.stoppedAtMs)} | ${x.exitCode === undefined ? '—' : x.exitCode === null ? 'killed' : x.exitCode} | ${n(x.input)} | ${input > 0 ? ((100 * x.input) / input).toFixed(1) : '0'} % | ${n(x.output)} | ${n(x.fanOutPublished)} |`,
    ),
    '',
    'Controller decisions (the first, and every one that added or removed an instance or changed the desired count):',
    '',
    '| t (s) | active messages (all functions) | of which drain | instances | desired | action |',
    '|---|---|---|---|---|---|',
    ...r.decisions.map(
      (d) =>
        `| ${s(d.atMs)} | ${d.active} | ${d.drainActive} | ${d.before} | ${d.desired} | ${d.added ? `+${d.added}` : d.removed.length ? `stopped ${d.removed.join(', ')}` : 'hold'} |`,
    ),
    '',
    `Instances over time (every 5 s from the controller's start; active messages in brackets): ${r.timeline
      .filter((t, i) => i % 5 === 0)
      .map((t) => `${Math.round(t.tMs / 1000)} s: ${t.instances} [${t.active}]`)
      .join(', ')}.`,
  ];
  return lines.join('\n');
}

/** One line: the starved run against the plain one (the bench log, and the section's summary). */
export function overloadSummary(plain: ScaleOutRun, starved: ScaleOutRun): string {
  const ratio = plain.elapsedMs > 0 ? starved.elapsedMs / plain.elapsedMs : Number.NaN;
  return `starved ${s(starved.elapsedMs)} s against plain ${s(plain.elapsedMs)} s (× ${ratio.toFixed(2)}); chunks processed twice ${n(starved.processedTwice)} of ${n(starved.chunks)} (${pct(starved.processedTwice, starved.chunks)}) against ${n(plain.processedTwice)}; leases lost ${starved.leasesLost} against ${plain.leasesLost}; event-loop delay p99 ${starved.eventLoopDelayP99Ms} ms against ${plain.eventLoopDelayP99Ms} ms`;
}

function pct(part: number, whole: number): string {
  return whole > 0 ? `${((100 * part) / whole).toFixed(2)} %` : '—';
}

/** The overload run's figures beside the plain run's (when both ran), then its own scale-out tables. */
export function overloadSection(r: ScaleOutRun, plain: ScaleOutRun | undefined): string {
  const row = (name: string, x: ScaleOutRun): string =>
    `| ${name} | ${x.hogProcesses} | ${s(x.elapsedMs)} | ${n(x.processedTwice)} of ${n(x.chunks)} (${pct(x.processedTwice, x.chunks)}) | ${x.leasesLost} | ${x.eventLoopDelayP99Ms} | ${n(x.visibilityExtensions)} (${((1000 * x.visibilityExtensions) / Math.max(1, x.chunks)).toFixed(1)} per 1,000 chunks) | ${x.reportsExact} of ${x.batches} |`;
  return [
    'The same backlog and fleet as the scale-out run, with one busy process per core started at the controller’s start and stopped at the last report: every instance gets a fraction of the CPU it had, as a throttled instance would. The goals: at most 1 % of chunks processed twice, no slot lease lost, at most 2.5× the plain run’s time.',
    '',
    '| run | busy processes | last report (s) | chunks processed twice | slot leases lost | event-loop delay p99, worst instance (ms) | visibility extensions | reports exact |',
    '|---|---|---|---|---|---|---|---|',
    ...(plain ? [row('plain', plain)] : []),
    row('starved', r),
    '',
    ...(plain ? [`Starved ÷ plain time: × ${(r.elapsedMs / Math.max(1, plain.elapsedMs)).toFixed(2)}.`, ''] : []),
    scaleOutSection(r),
  ].join('\n');
}
