/**
 * `npm run bench`: starts its own Azurite and Service Bus broker, runs every scenario for
 * pushdrain and each baseline on the same generated data, prints the tables, and writes
 * tools/bench/results/latest.json and BENCHMARKS.md. `--quick` is the seconds-long smoke version.
 */
import { readFileSync } from 'node:fs';
import { cpus, loadavg, release, totalmem, type } from 'node:os';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';

import { defaultTuning } from '../../shared/config/settings';
import { findRepoRoot } from '../devstack/host/registry';
import { rng } from '../testkit/generate';
import {
  idleFigures,
  latencyFigures,
  limitFigures,
  memoryFigures,
  type ProfileFigures,
  storageFigures,
  throughputFigures,
  trickleFigures,
} from './analyze';
import { type DesignName, DESIGNS } from './app';
import { type BenchConfig, fullConfig, pushdrainAppCount, quickConfig, type ScenarioName, SCENARIOS } from './config';
import { peerFigures } from './peer-figures';
import {
  attributionLine,
  type BenchResults,
  keyRatios,
  type MachineInfo,
  renderTables,
  wireLine,
  writeJson,
  writeMarkdown,
} from './report';
import { overloadSummary } from './scale-out-report';
import { brokerFigures, type BrokerJob, type BrokerRun } from './scenarios/broker';
import { runIdle } from './scenarios/idle';
import { runLatency } from './scenarios/latency';
import type { LimitJob, LimitRun } from './scenarios/limit';
import { runMemory } from './scenarios/memory';
import { runHttpMemory } from './scenarios/memory-http';
import { runScaleOut } from './scenarios/scale-out';
import { runTelemetryCost } from './scenarios/telemetry-cost';
import { runThroughput, type ThroughputRunRecord } from './scenarios/throughput-runs';
import { runTrickle } from './scenarios/trickle';
import { runWake } from './scenarios/wake';
import { runWebhooks } from './scenarios/webhooks';
import { type PeerResult, runWebJobsPeer } from './scenarios/webjobs-peer';
import { runChild } from './support/child';
import { findAzuritePid } from './support/cpu';
import { batchFile, batchSpecs } from './support/data';
import { startEnv } from './support/env';
import { attributionChecks, wireChecks } from './support/fleet';
import { problems } from './support/log';
import { besideLimit, topFunctions } from './support/profiler';
import { peerUnavailable } from './support/webjobs-peer';
import { webhooksFigures } from './webhooks-report';

const HELP = `usage: node dist/tools/bench/run.js [--quick] [--only <scenario,...>] [--designs <design,...>] [--batches <n>] [--batch-size <n>] [--reps <n>] [--trickle-batches <n>] [--trickle-gap-ms <n>] [--trickle-reps <n>] [--out <file.json>] [--markdown <file.md>] [--no-markdown] [--no-peer]
  --quick        smoke sizes: tiny batches, one repetition, seconds in all
  --only         run only these scenarios: ${SCENARIOS.join(', ')} (storage comes with throughput)
  --designs      throughput, latency and trickle: only these designs (${DESIGNS.join(', ')})
  --batches, --batch-size, --reps   throughput: override the number and size of batches and the repetitions
  --trickle-batches, --trickle-gap-ms, --trickle-reps   trickle: batches per design, ms between submissions, repetitions
  --out          results JSON (default tools/bench/results/latest.json; --quick: tools/bench/results/quick.json)
  --markdown     BENCHMARKS.md to update (default: BENCHMARKS.md for a full run of every scenario)
  --no-markdown  do not touch any markdown file
  --no-peer      idle, wake, trickle: leave out the real WebJobs peer (a .NET host that takes minutes)`;

interface Cli {
  config: BenchConfig;
  only: Set<ScenarioName>;
  designs: DesignName[];
  out: string;
  markdown: string | undefined;
}

function parseCli(argv: string[], root: string): Cli | undefined {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean', default: false },
      only: { type: 'string' },
      out: { type: 'string' },
      markdown: { type: 'string' },
      'no-markdown': { type: 'boolean', default: false },
      'no-peer': { type: 'boolean', default: false },
      designs: { type: 'string' },
      batches: { type: 'string' },
      'batch-size': { type: 'string' },
      reps: { type: 'string' },
      'trickle-batches': { type: 'string' },
      'trickle-gap-ms': { type: 'string' },
      'trickle-reps': { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) return undefined;
  const wanted = (values.only ?? SCENARIOS.join(',')).split(',').map((s) => s.trim());
  for (const w of wanted)
    if (!(SCENARIOS as readonly string[]).includes(w))
      throw new Error(`--only: unknown scenario "${w}" (known: ${SCENARIOS.join(', ')})`);
  const only = new Set(wanted as ScenarioName[]);
  if (only.has('storage')) only.add('throughput');
  const config = values.quick ? quickConfig() : fullConfig();
  const designs = (values.designs ?? DESIGNS.join(',')).split(',').map((d) => d.trim());
  for (const d of designs)
    if (!(DESIGNS as readonly string[]).includes(d))
      throw new Error(`--designs: unknown design "${d}" (known: ${DESIGNS.join(', ')})`);
  const count = (flag: string, v: string | undefined): number | undefined => {
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1) throw new Error(`--${flag} must be a positive whole number, got "${v}"`);
    return n;
  };
  const batches = count('batches', values.batches);
  const batchSize = count('batch-size', values['batch-size']);
  const reps = count('reps', values.reps);
  const trickle = {
    batches: count('trickle-batches', values['trickle-batches']),
    gapMs: count('trickle-gap-ms', values['trickle-gap-ms']),
    reps: count('trickle-reps', values['trickle-reps']),
  };
  for (const [k, v] of Object.entries(trickle)) if (v !== undefined) config.trickle[k as keyof typeof trickle] = v;
  if (values['no-peer']) config.webjobsPeer.peers = 0;
  const overridden =
    values['no-peer'] ||
    batches !== undefined ||
    batchSize !== undefined ||
    reps !== undefined ||
    values.designs !== undefined ||
    Object.values(trickle).some((v) => v !== undefined);
  if (batches !== undefined || batchSize !== undefined) {
    const first = config.throughput.batches[0]!;
    config.throughput.batches = batchSpecs(
      batches ?? config.throughput.batches.length,
      batchSize ?? first.count,
      first.seed,
    );
    // The limit runs the same batches (as the full run has it), resized with them.
    if (config.mode === 'full') config.limit.batches = config.throughput.batches;
  }
  if (reps !== undefined) config.throughput.reps = reps;
  // A partial or resized run must not overwrite the published figures.
  const everything = SCENARIOS.every((s) => only.has(s)) && !overridden;
  const markdown = values['no-markdown']
    ? undefined
    : (values.markdown ?? (config.mode === 'full' && everything ? join(root, 'BENCHMARKS.md') : undefined));
  return {
    config,
    only,
    designs: designs as DesignName[],
    out: values.out ?? join(root, 'tools', 'bench', 'results', config.mode === 'full' ? 'latest.json' : 'quick.json'),
    markdown,
  };
}

function machine(): MachineInfo {
  let azurite = 'unknown';
  try {
    azurite = (JSON.parse(readFileSync(require.resolve('azurite/package.json'), 'utf8')) as { version: string })
      .version;
  } catch {
    // reported as unknown
  }
  return {
    cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
    cpus: cpus().length,
    memoryGb: totalmem() / 1024 ** 3,
    os: `${type()} ${release()}`,
    node: process.versions.node,
    azurite,
    sharedMachine: `Load average when the run started: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(
        ' / ',
      )} (1/5/15 min); CPU figures are per process, so other work on the machine moves times, not CPU seconds.`,
  };
}

const PUSHDRAIN_PATH =
  'in-process PushdrainApp (the composition root as deployed) with the real POST /api/batches handler; WorkDetected events go over AMQP to the development Service Bus broker (official SDK) and come back through the local host’s Service Bus trigger runner with host.json’s settings (its maxConcurrentCalls per function, auto-complete), which calls the drain / aggregate handler and, on the `scale` subscription, the scaling agent. Its Storage traffic is counted by its meter and, beside it, at the wire by a counting proxy in front of Azurite (in scenario 1, in a run of the same batches of its own, untimed, before the timed ones: the proxy shares the two cores). Service Bus operations are counted by the broker.';

async function timed<T>(
  timings: Record<string, number>,
  name: string,
  log: (l: string) => void,
  fn: () => Promise<T>,
): Promise<T> {
  const t0 = Date.now();
  log(`${name}…`);
  try {
    return await fn();
  } finally {
    timings[name] = (Date.now() - t0) / 1000;
    log(`${name}: ${timings[name].toFixed(1)} s`);
  }
}

async function main(): Promise<void> {
  const root = findRepoRoot(__dirname);
  const cli = parseCli(process.argv.slice(2), root);
  if (!cli) {
    console.log(HELP);
    return;
  }
  const { config: cfg, only, designs } = cli;
  const log = (line: string): void =>
    console.log(`[bench ${((Date.now() - t0) / 1000).toFixed(0).padStart(4)} s] ${line}`);
  const t0 = Date.now();
  const startedAt = new Date().toISOString();
  const host = machine();
  const random = rng(cfg.seed);
  const timings: Record<string, number> = {};
  const raw: Record<string, unknown> = {};
  const results: Partial<BenchResults> = {};

  const env = await timed(timings, 'setup', log, async () => {
    // Generate (or find cached) every input before anything is timed.
    for (const spec of [
      ...cfg.throughput.batches,
      ...cfg.throughput.noClaimCheckBatches,
      ...(only.has('scaleout') || only.has('overload') ? cfg.scaleOut.batches : []),
    ])
      batchFile(spec);
    return startEnv(pushdrainAppCount(cfg));
  });
  const azuritePid = findAzuritePid();
  let throughputRuns: ThroughputRunRecord[] = [];
  try {
    const limitRuns: LimitRun[] = [];
    const limitProfile = join(root, 'tools', 'bench', 'results', 'limit.cpuprofile');
    let limitProfiled: LimitRun | undefined;
    /** A timed limit run, or (profile) the untimed profiled one taken beside pushdrain's. */
    const limitJob = async (profile = false): Promise<void> => {
      const t = Date.now();
      const job: LimitJob = {
        kind: 'limit',
        batches: cfg.limit.batches,
        ...(profile ? { profileFile: limitProfile } : {}),
      };
      const run = await runChild<LimitRun>(job, { timeoutMs: 600_000 });
      if (profile) limitProfiled = run;
      else limitRuns.push(run);
      timings.limit = (timings.limit ?? 0) + (Date.now() - t) / 1000;
      log(
        `  machine limit${profile ? ' CPU-profiled (untimed)' : ''}: ${run.transactions} tx in ${(run.elapsedMs / 1000).toFixed(1)} s = ${run.tps.toFixed(0)} tx/s, CPU ${run.cpuSeconds.toFixed(1)} s`,
      );
    };
    if (only.has('throughput')) {
      const throughput = await timed(timings, 'throughput', log, () =>
        runThroughput(env, cfg.throughput, {
          designs,
          azuritePid,
          profileDir: join(root, 'tools', 'bench', 'results'),
          log,
          // The limit is measured next to each repetition, so a busy spell on a shared machine
          // weighs on both sides of the ratio alike; its profiled run goes beside pushdrain's.
          ...(only.has('limit')
            ? { beforeRep: () => limitJob(), beforeProfile: () => limitJob(cfg.throughput.profile) }
            : {}),
        }),
      );
      throughputRuns = throughput.runs;
      raw.throughput = throughputRuns;
      results.throughput = throughputFigures(throughputRuns);
      results.storage = storageFigures(throughputRuns);
      const profiled = throughput.profiled;
      if (profiled?.profileFile)
        results.profile = {
          file: relative(root, profiled.profileFile),
          ...topFunctions(profiled.profileFile, 5, root),
          ...(limitProfiled?.profileFile
            ? {
                beside: {
                  limitFile: relative(root, limitProfiled.profileFile),
                  ...besideLimit(
                    { file: profiled.profileFile, transactions: profiled.transactions },
                    { file: limitProfiled.profileFile, transactions: limitProfiled.transactions },
                    12,
                    root,
                  ),
                },
              }
            : {}),
        } satisfies ProfileFigures;
    }
    // The real trigger's costs are set by its timers, like the port's, so it runs beside them.
    let peerJob: Promise<PeerResult> | undefined;
    if ((only.has('idle') || only.has('wake') || only.has('trickle')) && cfg.webjobsPeer.peers > 0) {
      const missing = peerUnavailable();
      if (missing) log(`webjobs-peer: skipped, ${missing}`);
      else {
        peerJob = timed(timings, 'webjobs-peer', log, () => runWebJobsPeer(env, cfg.webjobsPeer, random));
        peerJob.catch(() => undefined);
      }
    }
    if (only.has('idle')) {
      const idle = await timed(timings, 'idle', log, () => runIdle(env, cfg.idle, random));
      raw.idle = idle;
      results.idle = idleFigures(idle);
    }
    if (only.has('wake')) {
      const wake = await timed(timings, 'wake', log, () => runWake(env, cfg.wake, random));
      raw.wake = wake;
      results.wake = latencyFigures(wake);
    }
    if (only.has('latency')) {
      const latency = await timed(timings, 'latency', log, () => runLatency(env, cfg.latency, designs, random));
      raw.latency = latency;
      results.latency = latencyFigures(latency);
    }
    if (only.has('trickle')) {
      const trickle = await timed(timings, 'trickle', log, () => runTrickle(env, cfg.trickle, designs, random));
      raw.trickle = trickle;
      results.trickle = trickleFigures(trickle, cfg.trickle.gapMs);
      for (const t of trickle)
        log(
          `  trickle ${t.design}${t.withoutBatchEvents ? ' (no batch-events topic)' : ''}${t.leftoversWritten ? ' (usage leftovers written)' : ''}${t.cold ? ` (cold: ${t.instances} fresh instances)` : ''}${t.stalled ? ` STALLED, left out: ${t.stalled};` : ''}: ${t.wire ? `${t.wire.total ?? 0} storage tx at the wire, ` : ''}${t.storage.total ?? 0} by the meter for ${t.transactions} tx ${JSON.stringify(t.wire ?? t.storage)}, latencies ${t.latenciesMs.join(', ')} ms${t.byInstance ? `; by instance ${JSON.stringify(t.byInstance)}` : ''}`,
        );
    }
    if (only.has('webhooks')) {
      const runs = await timed(timings, 'webhooks', log, () => runWebhooks(env, cfg.webhooks, random));
      raw.webhooks = runs;
      results.webhooks = webhooksFigures(runs, cfg.webhooks);
      for (const r of runs)
        log(
          `  webhooks rep ${r.rep}: completion → received ${r.trials.map((t) => t.latencyMs).join(', ')} ms; idle ${JSON.stringify(r.idle.storage)} in ${r.idle.windowMs} ms`,
        );
    }
    // The real peer is a separate .NET host: its failure costs its rows, not the whole run's results.
    const peer = await peerJob?.catch((e: unknown) => {
      log(`webjobs-peer: failed, no peer rows in this run: ${e instanceof Error ? e.message : String(e)}`);
      return undefined;
    });
    if (peer) {
      raw.webjobsPeer = peer;
      results.webjobsPeer = peerFigures(peer);
      log(
        `  webjobs peer: settle ${results.webjobsPeer.settleSeconds.toFixed(0)} s, idle ${(results.webjobsPeer.idlePerQueueHour.total ?? 0).toFixed(1)} tx per queue-hour, wake p50 ${results.webjobsPeer.wake.p50Ms} ms`,
      );
      for (const m of peer.missed) log(`  webjobs peer: ${m.phase} message ${m.id} on ${m.queue} not run: ${m.why}`);
    }
    if (only.has('memory')) {
      const sources = cfg.throughput.batches;
      const memory = await timed(timings, 'memory', log, async () => ({
        timer: await runMemory(env, { ...cfg.memory, sources }),
        http: await runHttpMemory({ ...cfg.memory.http, sources }, log),
      }));
      raw.memory = memory;
      results.memory = memoryFigures(memory.timer, memory.http);
    }
    if (only.has('telemetry')) {
      const cost = await timed(timings, 'telemetry', log, () =>
        runTelemetryCost(env, cfg.throughput, { azuritePid, log }),
      );
      results.telemetry = cost;
      log(
        `  telemetry cost: off ${cost.offCpuPerMillion.toFixed(2)} s, OTLP ${cost.otlpCpuPerMillion.toFixed(2)} s CPU per 1M tx: ${(cost.overhead * 100).toFixed(1)} % more (${cost.sink.requests} exports, ${cost.sink.bytes} bytes to the sink)`,
      );
    }
    if (only.has('scaleout')) {
      const instanceLog = join(
        root,
        'tools',
        'bench',
        'results',
        `scaleout-instances${cfg.mode === 'quick' ? '-quick' : ''}.log`,
      );
      results.scaleOut = await timed(timings, 'scaleout', log, () =>
        runScaleOut({ ...cfg.scaleOut, instanceLog }, log),
      );
    }
    if (only.has('overload')) {
      const instanceLog = join(
        root,
        'tools',
        'bench',
        'results',
        `overload-instances${cfg.mode === 'quick' ? '-quick' : ''}.log`,
      );
      results.overload = await timed(timings, 'overload', log, () =>
        runScaleOut({ ...cfg.scaleOut, instanceLog, cpuHogMaxMs: cfg.overload.cpuHogMaxMs }, log),
      );
      if (results.scaleOut) log(`  overload: ${overloadSummary(results.scaleOut, results.overload)}`);
    }
    if (only.has('limit')) {
      if (limitRuns.length === 0)
        await timed(timings, 'limit', log, async () => {
          for (let i = 0; i < cfg.limit.reps; i++) await limitJob();
        });
      raw.limit = limitRuns;
      const ours = throughputRuns.filter((r) => r.design === 'pushdrain').sort((a, b) => a.rep - b.rep);
      results.limit = limitFigures(limitRuns, ours);
    }
    if (only.has('broker')) {
      const runs = await timed(timings, 'broker', log, async () => {
        const out: BrokerRun[] = [];
        const { reps, ...sizes } = cfg.broker;
        for (let rep = 0; rep < reps; rep++) {
          // Alternate which goes first, so a drift on a shared machine weighs on both sides.
          for (const durable of rep % 2 === 0 ? [false, true] : [true, false]) {
            const run = await runChild<BrokerRun>({ kind: 'broker', durable, ...sizes } satisfies BrokerJob, {
              timeoutMs: 300_000,
            });
            out.push(run);
            log(
              `  broker ${durable ? 'durable  ' : 'in memory'}: send ${run.sendOnePerSec.toFixed(0)}/s (1 sender), ${run.sendManyPerSec.toFixed(0)}/s (${sizes.senders}), receive+complete ${run.receiveCompletePerSec.toFixed(0)}/s`,
            );
          }
        }
        return out;
      });
      raw.broker = runs;
      results.broker = brokerFigures(runs, cfg.broker.messages);
    }
  } finally {
    await env.stop();
  }
  if (wireChecks.length > 0) {
    results.wire = {
      apps: wireChecks.length,
      equal: wireChecks.filter((c) => c.equal).length,
      mismatches: wireChecks.filter((c) => !c.equal),
    };
    log(wireLine(results.wire));
  }
  if (attributionChecks.length > 0) {
    results.attribution = {
      windows: attributionChecks.length,
      within: attributionChecks.filter((c) => c.within).length,
      checks: attributionChecks,
    };
    log(attributionLine(results.attribution));
  }

  const finished: BenchResults = {
    version: 1,
    mode: cfg.mode,
    command: `node dist/tools/bench/run.js ${process.argv.slice(2).join(' ')}`.trim(),
    startedAt,
    finishedAt: new Date().toISOString(),
    wallSeconds: (Date.now() - t0) / 1000,
    timings,
    machine: host,
    settings: { tuning: defaultTuning(), config: cfg, pushdrainPath: PUSHDRAIN_PATH },
    ...results,
    warnings: [...problems, ...throughputRuns.flatMap((r) => r.warnings)],
    raw,
  };
  writeJson(cli.out, finished);
  if (cli.markdown) writeMarkdown(cli.markdown, finished);
  console.log(`\n${renderTables(finished)}\n`);
  console.log(
    `wrote ${cli.out}${cli.markdown ? ` and ${cli.markdown}` : ''}; bench wall time ${finished.wallSeconds.toFixed(0)} s`,
  );
  for (const l of keyRatios(finished)) log(l);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
