/**
 * Scenario 1 orchestration: every design, every repetition, one child process each, one at a
 * time (the design order rotates between repetitions, so no design always runs on a cooler or
 * warmer machine). Service Bus operations are read from the broker around each run, and
 * pushdrain's storage requests at the wire by a counting proxy, checked against its meter.
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
}

export async function runThroughput(
  env: BenchEnv,
  cfg: BenchConfig['throughput'],
  o: ThroughputOptions,
): Promise<ThroughputRunRecord[]> {
  const { designs, azuritePid, profileDir, log } = o;
  const out: ThroughputRunRecord[] = [];
  for (let rep = 0; rep < cfg.reps; rep++) {
    await o.beforeRep?.(rep);
    const order = designs.map((_, i) => designs[(i + rep) % designs.length] as DesignName);
    for (const design of order) {
      const topic = design === 'pushdrain' ? env.takeTopic() : undefined;
      // pushdrain's storage through a counting proxy here, in the parent: its CPU is not the app's.
      const wire = design === 'pushdrain' ? await startCountingProxy(env.azurite) : undefined;
      const prefix = freshPrefix(design);
      const batches = design === 'no-claim-check' ? cfg.noClaimCheckBatches : cfg.batches;
      const job: ThroughputJob = {
        kind: 'throughput',
        design,
        storage: wire?.connectionString ?? env.azurite.connectionString,
        direct: env.azurite.connectionString,
        ...(topic ? { serviceBus: { connectionString: env.broker.connectionString, topic } } : {}),
        prefix,
        batches,
        ...(azuritePid ? { azuritePid } : {}),
        // Every design is profiled in the first repetition, so the sampling costs all of them alike.
        ...(cfg.profile && rep === 0 ? { profileFile: join(profileDir, `throughput-${design}.cpuprofile`) } : {}),
        timeoutMs: 20 * 60_000,
      };
      const before = env.broker.stats();
      let run: ThroughputRun;
      try {
        run = await runChild<ThroughputRun>(job, { timeoutMs: 25 * 60_000 });
      } finally {
        await wire?.close();
      }
      const check = wire ? checkWire(design, prefix, run.meterLifetime, wire.snapshot()) : undefined;
      if (check) wireChecks.push(check);
      const after = env.broker.stats();
      const sb = serviceBusOperations(
        Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - (before[k] ?? 0)])),
      );
      out.push({ ...run, rep, serviceBusOperations: sb });
      log(
        `  throughput ${design} rep ${rep + 1}: ${run.transactions} tx in ${(run.elapsedMs / 1000).toFixed(1)} s = ${run.tps.toFixed(0)} tx/s, app CPU ${run.appCpuSeconds.toFixed(1)} s, peak RSS ${run.peakRssMb.toFixed(0)} MB, ${run.storage.total ?? 0} storage tx, event-loop delay p99 ${run.eventLoopDelay?.p99Ms ?? '?'} ms (max ${run.eventLoopDelay?.maxMs ?? '?'} ms), main thread busy ${run.eventLoopUtilization === undefined ? '?' : `${(run.eventLoopUtilization * 100).toFixed(0)} %`}, app CPU ÷ wall ${(run.appCpuSeconds / (run.elapsedMs / 1000)).toFixed(2)}${run.verified ? '' : ', REPORT MISMATCH'}`,
      );
    }
  }
  return out;
}
