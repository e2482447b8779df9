/**
 * The development broker held to the official .NET client, Azure.Messaging.ServiceBus, which
 * the Functions host's Service Bus trigger is built on: the checks live in
 * tools/devstack/servicebus/contract/ (a console program, one PASS/FAIL line each) and run here against
 * the broker's own CLI with a journal, as `npm start` runs it.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { buildDotnetProject, dotnetSkip, run } from '../../../test/support/dotnet';
import { findRepoRoot } from '../host/registry';
import { type BrokerProcess, startBrokerProcess } from './support/broker-process';

const PROJECT = join(findRepoRoot(__dirname), 'tools', 'devstack', 'servicebus', 'contract');
const PROGRAM = join(PROJECT, 'bin', 'Release', 'net10.0', 'ServiceBusContract.dll');
/** Every check the program runs: one missing from its output fails the test as a FAIL does. */
const CHECKS = 13;

describe('development broker: the .NET client contract', { skip: dotnetSkip() }, () => {
  let dataDir: string;
  let broker: BrokerProcess;

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'pushdrain-dotnet-contract-'));
    broker = await startBrokerProcess(dataDir);
  });

  after(async () => {
    await broker?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('Azure.Messaging.ServiceBus 7.21 sends, receives, settles, renews, schedules and routes as against Service Bus', async (t) => {
    const built = await buildDotnetProject(PROJECT);
    t.diagnostic(`dotnet build: ${built.ms} ms`);
    const result = await run('dotnet', [PROGRAM, broker.connectionString], { cwd: PROJECT, timeoutMs: 5 * 60_000 });
    t.diagnostic(`contract checks: ${result.ms} ms`);
    const failed = result.output.split('\n').filter((line) => line.startsWith('FAIL '));
    assert.deepEqual(failed, [], result.output);
    const passed = result.output.split('\n').filter((line) => line.startsWith('PASS ')).length;
    assert.equal(passed, CHECKS, result.output);
    assert.equal(result.code, 0, result.output);
  });
});
