/**
 * Scenario 1 orchestration: every design, every repetition, one child process each, one at a
 * time (the design order rotates between repetitions, so no design always runs on a cooler or
 * warmer machine). Service Bus operations are read from the broker around each run.
 *
 * The instruments run before the timed repetitions, in runs of their own on the same batches, and
 * never inside a timed run: pushdrain CPU-profiled (beside the limit's profiled run), and pushdrain
 * with its storage counted at the wire by a counting proxy and checked against its meter. Going
 * first, they also warm Azurite and the broker, whose first minutes (JIT, heap growth) slowed
 * whichever design ran first in the first repetition, always pushdrain. Both instruments
 * cost the run they watch: the proxy is a second process on the same two cores relaying every
 * request and body (it took 7–9 % of pushdrain's throughput), and the profiler samples the main
 * thread (the profiled repetition ran 5–10 % slower). No other design, and not the limit, paid
 * for the proxy; the limit paid less for the profiler.
 */
import { join } from 'node:path';

import type { DesignName } from '../app';
import type { BenchConfig } from '../config';
import { runChild } from '../support/child';
import { startCountingProxy } from '../support/counting-proxy';
import type { BenchEnv } from '../support/env';
import { checkWire, freshPrefix, wireChecks } from '../support/fleet';
import { serviceBusOperations } from '../support/service-bus';
import type { ThroughputJob, ThroughputRun } from './throughput';

export interface ThroughputRunRecord extends ThroughputRun {
  rep: number;
  /** Billable broker operations during the run (pushdrain only uses Service Bus). */
  serviceBusOperations: number;
}

export interface ThroughputOptions {
  designs: readonly DesignName[];
  azuritePid: number | undefined;
  profileDir: string;
  log: (line: string) => void;
  /** Runs at the start of each repetition (the machine-limit job, so both see the same load). */
  beforeRep?: (rep: number) => Promise<void>;
  /** Runs just before pushdrain's profiled run (the limit's profiled run, so both are taken alike). */
  beforeProfile?: () => Promise<void>;
}

export interface ThroughputResult {
  /** The timed runs. */
  runs: ThroughputRunRecord[];
  /** pushdrain's CPU-profiled run (untimed), when the config asks for a profile. */
  profiled?: ThroughputRun;
}

export async function runThroughput(
  env: BenchEnv,
  cfg: BenchConfig['throughput'],
  o: ThroughputOptions,
): Promise<ThroughputResult> {
  const { designs, azuritePid, profileDir, log } = o;
  let profiled: ThroughputRun | undefined;
  if (designs.includes('pushdrain') && cfg.profile) {
    await o.beforeProfile?.();
    const profile = join(profileDir, 'throughput-pushdrain.cpuprofile');
    profiled = await runOnce(env, cfg, 'pushdrain', { azuritePid, profile });
    log(
      `  throughput pushdrain CPU-profiled (untimed): ${(profiled.elapsedMs / 1000).toFixed(1)} s, app CPU ${profiled.appCpuSeconds.toFixed(1)} s${profiled.verified ? '' : ', REPORT MISMATCH'}`,
    );
  }
  if (designs.includes('pushdrain')) {
    const wire = await startCountingProxy(env.azurite);
    let run: Awaited<ReturnType<typeof runOnce>>;
    try {
      run = await runOnce(env, cfg, 'pushdrain', { azuritePid, storage: wire.connectionString });
    } finally {
      await wire.close();
    }
    const check = checkWire('pushdrain', run.prefix, run.meterLifetime, wire.snapshot());
    wireChecks.push(check);
    log(
      `  throughput pushdrain at the wire (untimed): ${wire.snapshot().total ?? 0} storage requests, ${check.equal ? 'equal to its meter' : 'NOT equal to its meter'}${run.verified ? '' : ', REPORT MISMATCH'}`,
    );
  }
  const out: ThroughputRunRecord[] = [];
  for (let rep = 0; rep < cfg.reps; rep++) {
    await o.beforeRep?.(rep);
    const order = designs.map((_, i) => designs[(i + rep) % designs.length] as DesignName);
    for (const design of order) {
      const run = await runOnce(env, cfg, design, { azuritePid });
      out.push({ ...run, rep });
      log(
        `  throughput ${design} rep ${rep + 1}: ${run.transactions} tx in ${(run.elapsedMs / 1000).toFixed(1)} s = ${run.tps.toFixed(0)} tx/s, app CPU ${run.appCpuSeconds.toFixed(1)} s, peak RSS ${run.peakRssMb.toFixed(0)} MB, ${run.storage.total ?? 0} storage tx, event-loop delay p99 ${run.eventLoopDelay?.p99Ms ?? '?'} ms (max ${run.eventLoopDelay?.maxMs ?? '?'} ms), main thread busy ${run.eventLoopUtilization === undefined ? '?' : `${(run.eventLoopUtilization * 100).toFixed(0)} %`}, app CPU ÷ wall ${(run.appCpuSeconds / (run.elapsedMs / 1000)).toFixed(2)}${run.verified ? '' : ', REPORT MISMATCH'}`,
      );
    }
  }
  return { runs: out, ...(profiled ? { profiled } : {}) };
}

/** One design's run of the throughput batches in a child process, with its Service Bus operations. */
async function runOnce(
  env: BenchEnv,
  cfg: BenchConfig['throughput'],
  design: DesignName,
  o: { azuritePid: number | undefined; profile?: string; storage?: string },
): Promise<ThroughputRun & { serviceBusOperations: number; prefix: string }> {
  const prefix = freshPrefix(design);
  const job: ThroughputJob = {
    kind: 'throughput',
    design,
    storage: o.storage ?? env.azurite.connectionString,
    direct: env.azurite.connectionString,
    ...(design === 'pushdrain'
      ? { serviceBus: { connectionString: env.broker.connectionString, topic: env.takeTopic() } }
      : {}),
    prefix,
    batches: design === 'no-claim-check' ? cfg.noClaimCheckBatches : cfg.batches,
    ...(o.azuritePid ? { azuritePid: o.azuritePid } : {}),
    ...(o.profile ? { profileFile: o.profile } : {}),
    timeoutMs: 20 * 60_000,
  };
  const before = env.broker.stats();
  const run = await runChild<ThroughputRun>(job, { timeoutMs: 25 * 60_000 });
  const after = env.broker.stats();
  const sb = serviceBusOperations(Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - (before[k] ?? 0)])));
  return { ...run, serviceBusOperations: sb, prefix };
}
