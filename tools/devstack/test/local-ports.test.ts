/**
 * `npm start` (dist/tools/devstack/start.js) with one of its ports already taken: it stops at once with a
 * message that names the component and the setting to change, never a bare EADDRINUSE.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';

import { runHostToExit } from '../../../test/support/host-process';

const data = mkdtempSync(join(tmpdir(), 'pd-ports-'));
after(() => rmSync(data, { recursive: true, force: true }));

async function holdPort(): Promise<{ server: Server; port: number }> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const address = server.address();
  return { server, port: typeof address === 'object' && address ? address.port : 0 };
}

/** Runs start.js to its exit (a start that does not fail is killed after 60 s, and the assertions fail). */
async function runStart(env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  const { code, output } = await runHostToExit(
    { AZURITE_BLOB_PORT: '0', AZURITE_QUEUE_PORT: '0', SERVICEBUS_PORT: '0', PUSHDRAIN_DATA_DIR: data, ...env },
    60_000,
  );
  return { code, out: output };
}

const CASES = [
  { setting: 'PORT', component: /local Functions host \(HTTP\)/ },
  { setting: 'AZURITE_BLOB_PORT', component: /Azurite \(blob service\)/ },
  { setting: 'AZURITE_QUEUE_PORT', component: /Azurite \(queue service\)/ },
  { setting: 'SERVICEBUS_PORT', component: /development Service Bus broker/ },
] as const;

describe('npm start with a port already in use', () => {
  for (const { setting, component } of CASES) {
    test(`${setting} taken: names the component and ${setting}`, async () => {
      const { server, port } = await holdPort();
      try {
        const { code, out } = await runStart({ [setting]: String(port) });
        assert.equal(code, 1, out);
        const line = out.split('\n').find((l) => l.startsWith('pushdrain failed to start:')) ?? '';
        assert.match(line, component, out);
        assert.match(line, new RegExp(`port ${port}: it is already in use`));
        assert.match(line, new RegExp(`Set ${setting} to a free port, or ${setting}=0 for any`));
        assert.doesNotMatch(out, /^Error: listen EADDRINUSE/m, 'no bare stack trace');
      } finally {
        server.close();
      }
    });
  }
});
