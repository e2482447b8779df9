/**
 * What telemetry costs: the throughput job for pushdrain, with telemetry off and with spans and
 * metrics sent over OTLP/HTTP (protobuf) to a local sink, in alternating order within one run, so
 * a busy spell on a shared machine weighs on both sides. The sink is a plain HTTP server in the
 * orchestrating process, answering 200 as a collector would: its CPU is not the app's.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

import type { BenchConfig } from '../config';
import { runChild } from '../support/child';
import type { BenchEnv } from '../support/env';
import { freshPrefix } from '../support/fleet';
import type { ThroughputJob, ThroughputRun } from './throughput';

interface TelemetryCostRun {
  telemetry: 'off' | 'otlp';
  rep: number;
  transactions: number;
  appCpuSeconds: number;
  /** App CPU seconds per 1,000,000 transactions. */
  cpuPerMillion: number;
  elapsedMs: number;
  verified: boolean;
}

export interface TelemetryCostFigures {
  runs: TelemetryCostRun[];
  /** Mean CPU seconds per 1M transactions, each side. */
  offCpuPerMillion: number;
  otlpCpuPerMillion: number;
  /** otlp ÷ off − 1: the extra CPU telemetry costs (goal ≤ 5 %). */
  overhead: number;
  /** What the sink received, across the otlp runs. */
  sink: { requests: number; bytes: number };
}

export async function runTelemetryCost(
  env: BenchEnv,
  cfg: BenchConfig['throughput'],
  o: { azuritePid: number | undefined; log: (line: string) => void },
): Promise<TelemetryCostFigures> {
  const sink = { requests: 0, bytes: 0 };
  const server = createServer((req, res) => {
    req.on('data', (c: Buffer) => (sink.bytes += c.length));
    req.on('end', () => {
      sink.requests++;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' });
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const runs: TelemetryCostRun[] = [];
  try {
    for (let rep = 0; rep < cfg.reps; rep++) {
      for (const telemetry of rep % 2 === 0 ? (['off', 'otlp'] as const) : (['otlp', 'off'] as const)) {
        const job: ThroughputJob = {
          kind: 'throughput',
          design: 'pushdrain',
          storage: env.azurite.connectionString,
          serviceBus: { connectionString: env.broker.connectionString, topic: env.takeTopic() },
          prefix: freshPrefix('pushdrain'),
          batches: cfg.batches,
          ...(o.azuritePid ? { azuritePid: o.azuritePid } : {}),
          ...(telemetry === 'otlp' ? { telemetryEndpoint: endpoint } : {}),
          timeoutMs: 20 * 60_000,
        };
        const run = await runChild<ThroughputRun>(job, { timeoutMs: 25 * 60_000 });
        const cpuPerMillion = (run.appCpuSeconds * 1_000_000) / Math.max(1, run.transactions);
        runs.push({
          telemetry,
          rep,
          transactions: run.transactions,
          appCpuSeconds: run.appCpuSeconds,
          cpuPerMillion,
          elapsedMs: run.elapsedMs,
          verified: run.verified,
        });
        o.log(
          `  telemetry ${telemetry} rep ${rep + 1}: ${run.transactions} tx, app CPU ${run.appCpuSeconds.toFixed(2)} s = ${cpuPerMillion.toFixed(2)} s per 1M tx${run.verified ? '' : ', REPORT MISMATCH'}`,
        );
      }
    }
  } finally {
    await new Promise((r) => server.close(r));
  }
  const mean = (side: 'off' | 'otlp'): number => {
    const xs = runs.filter((r) => r.telemetry === side).map((r) => r.cpuPerMillion);
    return xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  };
  const off = mean('off');
  const otlp = mean('otlp');
  return { runs, offCpuPerMillion: off, otlpCpuPerMillion: otlp, overhead: otlp / off - 1, sink };
}
