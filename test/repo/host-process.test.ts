/**
 * The tests' own harness for the local host as a child process (test/support/host-process.ts),
 * on the two things a failed CI run taught it: a host that exits at start-up is reported with what
 * that start printed (not the tail of an earlier incarnation's log), and a host asked for any port
 * gets one below Linux's ephemeral range, so the restart after a kill finds it free.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';

import { type HostProcess, startHostProcess } from '../support/host-process';
import { scratchDir } from '../support/scratch-dir';

// Embedded Azurite and broker on ports of their own; data in a folder of this file's.
const STACK = {
  AZURITE_BLOB_PORT: '0',
  AZURITE_QUEUE_PORT: '0',
  SERVICEBUS_PORT: '0',
  PUSHDRAIN_DATA_DIR: scratchDir('host-process-'),
  PUSHDRAIN_SWEEP_SCHEDULE: '0 0 0 1 1 *',
};

const hosts: HostProcess[] = [];
after(async () => {
  for (const h of hosts) await h.stop();
});

describe('the local host as a test child process', () => {
  test('a start-up failure is reported with that start’s own output', async () => {
    await assert.rejects(startHostProcess({ ...STACK, PUSHDRAIN_CHUNK_SIZE: 'many' }, 0, 60_000), (e: Error) => {
      assert.match(e.message, /the local host exited with 1 at start-up \(port \d+\)/);
      assert.match(e.message, /PUSHDRAIN_CHUNK_SIZE/, 'the setting the host refused is in the report');
      return true;
    });
  });

  test('any port is one below the ephemeral range, and a killed host comes back on it', async () => {
    const host = await startHostProcess(STACK, 0, 60_000);
    hosts.push(host);
    const port = host.port;
    assert.ok(port >= 20_000 && port < 32_768, `port ${port} is below Linux's ephemeral range`);
    await host.kill();
    await host.restart();
    assert.equal(host.port, port);
    const res = await fetch(`${host.base}/api/health`, { signal: AbortSignal.timeout(10_000) });
    assert.ok(res.status === 200 || res.status === 503, `the restarted host answers (${res.status})`);
    await res.body?.cancel();
  });
});
