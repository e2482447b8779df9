/**
 * `npm start` supervises its embedded Azurite (tools/devstack/supervisor.ts): the real start.js
 * with Azurite and the development broker, data in a temporary PUSHDRAIN_DATA_DIR. Azurite is
 * SIGKILLed mid-batch, as the OOM killer would: one line names it and the signal, health is red
 * while it restarts on the same folder and ports, and the batch completes with the right report
 * without anyone restarting anything, within 30 s of the kill. Killed three times within a minute, npm start gives up with
 * a clear message and exit code 1.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';

import { type HostProcess, startHostProcess } from '../../../test/support/host-process';
import { portBelowEphemeral } from '../../../test/support/port-below-ephemeral';
import { scratchDir } from '../../../test/support/scratch-dir';
import { generate, toNdjson } from '../../testkit/generate';
import { expectedReport } from '../../testkit/oracle';
import { AZURITE_PID_FILE } from '../azurite';
import { type Supervisable, supervise } from '../supervisor';

const hosts: HostProcess[] = [];
after(async () => {
  for (const h of hosts) await h.stop();
});

const env = (data: string, blob: number, queue: number): Record<string, string> => ({
  AZURITE_BLOB_PORT: String(blob),
  AZURITE_QUEUE_PORT: String(queue),
  SERVICEBUS_PORT: '0',
  PUSHDRAIN_DATA_DIR: data,
  PUSHDRAIN_CHUNK_SIZE: '500',
  // A message dequeued before the kill (its delete may have failed) is visible again after this.
  PUSHDRAIN_VISIBILITY_TIMEOUT_SECONDS: '3',
  PUSHDRAIN_SWEEP_SCHEDULE: '0 0 0 1 1 *',
  PUSHDRAIN_WATCHDOG_SLA_SECONDS: '3600',
});

/**
 * npm start on two ports that were free when probed. Another process can bind one between the
 * probe and Azurite's start (a CI run failed so once, on port 29878): npm start then refuses with
 * "already in use", and this tries other ports, up to 5 times. Once bound, the ports are Azurite's
 * for the rest of the test, restarts included.
 */
async function startOnFreePorts(data: string): Promise<HostProcess> {
  let refused = '';
  for (let attempt = 0; attempt < 5; attempt++) {
    const blob = await portBelowEphemeral();
    let queue = await portBelowEphemeral();
    for (let i = 0; queue === blob && i < 50; i++) queue = await portBelowEphemeral();
    try {
      return await startHostProcess(env(data, blob, queue), 0, 60_000);
    } catch (e) {
      refused = (e as Error).message;
      if (!/cannot listen on port \d+: it is already in use/.test(refused)) throw e;
    }
  }
  throw new Error(`npm start found no free Azurite ports in 5 tries:\n${refused}`);
}

function azuritePid(data: string): number {
  return Number(readFileSync(join(data, '.azurite', AZURITE_PID_FILE), 'utf8').trim());
}

interface Health {
  status: string;
  down?: string[];
}

async function health(host: HostProcess): Promise<Health> {
  return (await (await fetch(`${host.base}/api/health`)).json()) as Health;
}

const count = (text: string, what: string): number => text.split(what).length - 1;

describe('npm start supervises its embedded Azurite', () => {
  test('Azurite SIGKILLed mid-batch: one line says so, health is red until it is back, the batch completes unattended within 30 s', async (t) => {
    const data = scratchDir('pd-supervise-');
    const host = await startOnFreePorts(data);
    hosts.push(host);
    const txns = generate(20_000, 2404, 120);
    const res = await fetch(`${host.base}/api/batches`, {
      method: 'POST',
      body: toNdjson(txns),
      headers: { 'Content-Type': 'application/x-ndjson' },
    });
    assert.equal(res.status, 202, await res.clone().text());
    const { batchId } = (await res.json()) as { batchId: string };
    const pid = azuritePid(data);
    const before = (await (await fetch(`${host.base}/api/batches/${batchId}`)).json()) as { status: string };
    process.kill(pid, 'SIGKILL');
    const killedAt = Date.now();
    assert.ok(['accepted', 'processing'].includes(before.status), `killed mid-batch, not after it: ${before.status}`);

    // Health answers from memory: red, naming the part, until the restart is done.
    const red = await host.until('health to turn red', 10_000, async () => {
      const h = await health(host);
      return h.status === 'red' ? h : undefined;
    });
    assert.deepEqual(red.down, ['Azurite']);
    await host.until('the restart line', 30_000, () =>
      /Azurite restarted \(pid (\d+)\)/.exec(host.output()) ? true : undefined,
    );
    assert.equal(
      count(host.output(), `Azurite (pid ${pid}) exited unexpectedly (signal SIGKILL); restarting it`),
      1,
      'one line names the part and its signal',
    );
    const again = azuritePid(data);
    assert.notEqual(again, pid, 'a new Azurite on the same folder');

    const end = await host.until('the batch to finish', 120_000, async () => {
      const s = (await (await fetch(`${host.base}/api/batches/${batchId}`)).json()) as { status: string };
      return s.status === 'completed' || s.status === 'failed' ? s : undefined;
    });
    const tookMs = Date.now() - killedAt;
    t.diagnostic(`batch completed ${tookMs} ms after the kill`);
    assert.equal(end.status, 'completed');
    // Requests to the dead Azurite fail at once, wait for the restart, and the held messages are
    // settled or extended: nothing waits out a 40 s stall bound or a wedged restart.
    assert.ok(tookMs <= 30_000, `the batch completed ${tookMs} ms after the kill, more than 30 s`);
    const report = (await (await fetch(`${host.base}/api/batches/${batchId}/report`)).json()) as {
      rows: unknown[];
      totals: unknown[];
    };
    const expected = expectedReport(txns);
    assert.deepEqual(report.totals, expected.totals);
    assert.deepEqual(report.rows, expected.rows);
    const back = await health(host);
    assert.notEqual(back.status, 'red');
    assert.equal(back.down, undefined);
    assert.equal(await host.stop(), 0, 'a clean stop after a supervised restart');
  });

  test('Azurite killed three times within a minute: npm start stops with a clear message and exit code 1', async () => {
    const data = scratchDir('pd-giveup-');
    const host = await startOnFreePorts(data);
    hosts.push(host);
    for (let kill = 1; kill <= 3; kill++) {
      const pid = azuritePid(data);
      process.kill(pid, 'SIGKILL');
      if (kill < 3)
        await host.until(`restart ${kill}`, 30_000, () =>
          count(host.output(), 'Azurite restarted (pid') >= kill ? true : undefined,
        );
    }
    await host.until('npm start to give up and exit', 60_000, () => {
      try {
        process.kill(host.pid as number, 0);
        return undefined;
      } catch {
        return true;
      }
    });
    assert.match(host.output(), /Azurite died 3 times within 60 s \(last: signal SIGKILL\); stopping npm start/);
    assert.equal(await host.stop(), 1);
  });
});

describe('supervise (the rule, with a stand-in child)', () => {
  class Child implements Supervisable {
    private listener: ((e: { code: number | null; signal: NodeJS.Signals | null }) => void) | undefined;
    stopped = false;
    constructor(readonly pid: number) {}
    onExit(l: (e: { code: number | null; signal: NodeJS.Signals | null }) => void): void {
      this.listener = l;
    }
    die(code: number | null, signal: NodeJS.Signals | null = null): void {
      this.listener?.({ code, signal });
    }
    stop(): Promise<void> {
      this.stopped = true;
      return Promise.resolve();
    }
  }

  test('deaths spread over more than the window are restarted; a stop is not a death', async () => {
    let now = 0;
    let pid = 1;
    const lines: string[] = [];
    const downs: boolean[] = [];
    const gaveUp: string[] = [];
    const s = supervise({
      part: 'Part',
      first: new Child(pid),
      restart: () => Promise.resolve(new Child(++pid)),
      log: (l) => lines.push(l),
      down: (d) => downs.push(d),
      giveUp: (m) => gaveUp.push(m),
      now: () => now,
    });
    for (let i = 0; i < 4; i++) {
      s.current.die(i === 0 ? 1 : null, i === 0 ? null : 'SIGKILL');
      await new Promise((r) => setImmediate(r));
      now += 31_000; // two deaths per minute at most
    }
    assert.equal(s.current.pid, 5);
    assert.equal(gaveUp.length, 0);
    assert.deepEqual(downs, [true, false, true, false, true, false, true, false]);
    assert.match(lines[0] ?? '', /^Part \(pid 1\) exited unexpectedly \(code 1\); restarting it$/);
    assert.match(lines[2] ?? '', /^Part \(pid 2\) exited unexpectedly \(signal SIGKILL\); restarting it$/);
    const last = s.current;
    await s.stop();
    assert.ok(last.stopped);
    last.die(0);
    assert.equal(lines.length, 8, 'an exit after stop() is not reported');
  });
});
