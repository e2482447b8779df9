/**
 * The benchmark's smoke run: `tools/bench/run.js --quick` end to end (its own Azurite and broker,
 * every scenario, every design, tiny sizes, one repetition), so the harness cannot rot. It
 * checks that the results are complete and well-formed; it never asserts a timing.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';

import { BASELINES, DESIGNS } from '../app';
import type { BenchResults } from '../report';
import type { Summary } from '../stats';

const dir = mkdtempSync(join(tmpdir(), 'pushdrain-bench-smoke-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function runQuick(out: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(__dirname, '..', 'run.js'), '--quick', '--no-markdown', '--out', out], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.once('exit', (code) => resolve({ code, output }));
  });
}

function finite(s: Summary | undefined, what: string): void {
  assert.ok(s, `${what} is missing`);
  assert.ok(s.runs.length > 0, `${what} has no runs`);
  for (const v of [s.median, s.min, s.max, ...s.runs])
    assert.ok(Number.isFinite(v), `${what} is not finite: ${JSON.stringify(s)}`);
}

describe('bench --quick', () => {
  test('every scenario × design is measured and the results are well-formed', { timeout: 600_000 }, async () => {
    const out = join(dir, 'quick.json');
    const { code, output } = await runQuick(out);
    assert.equal(code, 0, `bench --quick failed:\n${output.slice(-4000)}`);
    assert.match(output, /### 1\. Throughput/, 'the table is printed');
    assert.match(output, /### 8\. Work that trickles in/, 'the trickle table is printed');
    const r = JSON.parse(readFileSync(out, 'utf8')) as BenchResults;
    assert.equal(r.mode, 'quick');

    for (const d of DESIGNS) {
      const t = r.throughput?.perDesign[d];
      assert.ok(t, `throughput: ${d} missing`);
      assert.ok(t.transactions > 0);
      assert.equal(t.verified, true, `${d}: the report differs from the oracle`);
      finite(t.tps, `throughput ${d} tps`);
      finite(t.cpuPerMillion, `throughput ${d} CPU`);
      finite(r.storage?.perDesign[d]?.per1000, `storage ${d}`);
      assert.ok((r.storage?.perDesign[d]?.per1000.median ?? 0) > 0, `storage ${d}: nothing metered`);
      finite(r.idle?.perDesign[d]?.perHour, `idle ${d} per hour`);
      finite(r.idle?.perDesign[d]?.steady, `idle ${d} steady`);
      finite(r.wake?.perDesign[d]?.p50, `wake ${d} p50`);
      finite(r.wake?.perDesign[d]?.p95, `wake ${d} p95`);
      finite(r.latency?.perDesign[d]?.p50, `latency ${d} p50`);
      finite(r.latency?.perDesign[d]?.p95, `latency ${d} p95`);
      const tr = r.trickle?.perDesign[d];
      finite(tr?.per1000, `trickle ${d} storage`);
      assert.ok((tr?.per1000.median ?? 0) > 0, `trickle ${d}: nothing metered`);
      assert.ok(Object.keys(tr?.byOperation ?? {}).length > 0, `trickle ${d}: no per-operation split`);
      finite(tr?.p50, `trickle ${d} p50`);
      finite(tr?.p95, `trickle ${d} p95`);
    }
    for (const b of BASELINES) {
      finite(r.throughput?.tpsRatio[b], `throughput ratio vs ${b}`);
      finite(r.storage?.ratio[b], `storage ratio vs ${b}`);
      finite(r.wake?.p50Ratio[b], `wake ratio vs ${b}`);
      finite(r.latency?.p50Ratio[b], `latency ratio vs ${b}`);
      finite(r.trickle?.ratio[b], `trickle ratio vs ${b}`);
    }
    finite(r.trickle?.pushdrainWithoutBatchEvents?.per1000, 'trickle pushdrain without the batch-events topic');
    // pushdrain's storage at the wire: every app of every scenario agreed with its meter.
    finite(r.trickle?.perDesign.pushdrain?.wirePer1000, 'trickle pushdrain at the wire');
    assert.equal(r.trickle?.perDesign.pushdrain?.wireMismatches, 0, 'trickle: the wire equals the meter');
    assert.ok((r.wire?.apps ?? 0) >= 5, `every pushdrain app was counted at the wire (${r.wire?.apps})`);
    assert.deepEqual(r.wire?.mismatches, [], 'each app: its meter equals the wire, by operation');
    finite(r.webhooks?.p50, 'webhooks completion → received p50');
    finite(r.webhooks?.p95, 'webhooks completion → received p95');
    finite(r.webhooks?.idle.queuePerHour, 'webhooks idle queue tx per hour');
    assert.equal(r.webhooks?.unverified, 0, 'every webhook request verified');
    assert.ok((r.webhooks?.requestsPerEvent.median ?? 0) >= 1, 'every event reached the receiver');
    assert.equal(r.memory?.sizes.length, 2, 'two file sizes');
    for (const s of r.memory?.sizes ?? []) finite(s.peakRssMb, `memory ${s.transactions}`);
    assert.deepEqual(
      r.memory?.http.map((c) => c.gzip),
      [false, true],
      'the HTTP path measured plain and gzip',
    );
    for (const c of r.memory?.http ?? []) {
      const what = `memory over HTTP, ${c.gzip ? 'gzip' : 'plain'}`;
      finite(c.ingestPeakRssMb, what);
      finite(c.drainPeakRssMb, `${what}, after the 202`);
      assert.ok(c.ingestPeakRssMb.median >= c.startRssMb.median, `${what}: the peak is at least the start`);
      assert.ok(c.reportsAgree, `${what}: every report exact`);
    }
    finite(r.limit?.tps, 'limit');
    finite(r.limit?.pushdrainFraction, 'fraction of the limit');
    finite(r.broker?.ratio.sendMany, 'broker durable ÷ in-memory send');
    finite(r.broker?.ratio.receiveComplete, 'broker durable ÷ in-memory receive + complete');
    assert.ok((r.broker?.journal.opsPerCommit.median ?? 0) >= 1, 'the durable broker journaled');
    assert.ok((r.profile?.top.length ?? 0) > 0, 'the CPU profile names its top functions');
    assert.ok((r.profile?.beside?.rows.length ?? 0) > 0, "the profile is set beside the limit's, function by function");
    assert.match(output, /\| pushdrain \| 4,096 MB \| 2\.00 \|/, 'each Flex instance size is priced');
    const so = r.scaleOut;
    assert.ok(so, 'scale-out scenario');
    assert.equal(so.reportsExact, so.batches, 'scale-out: every report equals the oracle');
    assert.ok(
      so.decisions.some((d) => d.before === 0 && d.added > 0),
      'scale-out: the controller started instances from zero',
    );
    assert.ok(so.shares.reduce((a, x) => a + x.input, 0) >= so.chunks, 'scale-out: every chunk processed');
    assert.equal(so.after.instances, 0, 'scale-out: back to zero instances');
    assert.ok(r.wallSeconds > 0 && Object.keys(r.timings).length >= 10, 'per-scenario timings are recorded');
  });
});
