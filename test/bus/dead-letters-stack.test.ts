/**
 * Dead letters as an operator meets them, on the local stack (Azurite, the development broker,
 * the local host as a child): a Storage failure that is not transient (here: the drain slots'
 * container is gone; in Azure, say, a revoked role) makes every drain delivery fail until the
 * broker dead-letters the events (MaxDeliveryCountExceeded, as Service Bus does); the anonymous
 * health route shows the counts; `pushdrain redrive --dead-letters` (the real binary) moves
 * them back.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import type { Report } from '../../shared/billing/report';
import { entityNames, TOPIC } from '../../shared/names';
import type { DeadLetterRedriveResult } from '../../shared/poison/dead-letter-redrive';
import type { HealthState } from '../../shared/status/process-health';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { expectedReport } from '../../tools/testkit/oracle';
import { slotContainer, wakeForSlots } from '../support/dead-letter-stack';
import { LOCAL_KEY, type LocalStack, runCli, startLocalStack, statusOf, submitHeld } from '../support/local-stack';

const DRAIN = `${TOPIC}/Subscriptions/drain`;
let stack: LocalStack;

const cli = (args: readonly string[]): ReturnType<typeof runCli> =>
  runCli(args, { PUSHDRAIN_URL: stack.host.base, PUSHDRAIN_ADMIN_KEY: 'admin-key-any-works-locally' });

async function healthOf(): Promise<{ body: HealthState; text: string }> {
  const res = await fetch(`${stack.host.base}/api/health`); // anonymous: no key
  assert.equal(res.status, 200);
  const text = await res.text();
  return { body: JSON.parse(text) as HealthState, text };
}

before(async () => {
  stack = await startLocalStack({
    PUSHDRAIN_CHUNK_SIZE: '500',
    PUSHDRAIN_PARTITIONS: '2',
    PUSHDRAIN_MAX_IDLE_MS: '1000',
  });
});

after(async () => {
  await stack?.stop();
});

describe('dead letters on the local stack', () => {
  test('events dead-lettered during a Storage failure: health is degraded with the counts; the CLI resubmits them (--max bounds it), the batch completes, health is ok', async () => {
    const names = entityNames(stack.prefix, 2);
    const txns = generate(1000, 911, 20);
    const { batchId, chunks } = await submitHeld(stack, toNdjson(txns));
    assert.equal(chunks, 2);
    const leases = slotContainer(stack);
    await leases.delete();
    await wakeForSlots(stack, names.inputQueues());
    const deadLettered = await stack.host.until('both events dead-lettered', 60_000, async () => {
      const bus = (await statusOf(stack)).serviceBus;
      const drain = bus.available ? bus.entities.find((e) => e.entity === DRAIN) : undefined;
      return drain && drain.deadLetters === 2 ? drain : undefined;
    });
    assert.deepEqual(
      deadLettered.deadLettered.map((d) => d.reason),
      ['MaxDeliveryCountExceeded', 'MaxDeliveryCountExceeded'],
    );

    // The status report just counted them: health shows its counts, anonymously, counts only.
    const sick = await healthOf();
    assert.equal(sick.body.status, 'degraded');
    assert.equal(sick.body.deadLetters?.total, 2);
    assert.equal(sick.body.deadLetters?.byEntity[DRAIN], 2);
    assert.ok(
      !/MaxDelivery|queueName|storageAccount/.test(sick.text),
      `no reason or body in the anonymous answer: ${sick.text}`,
    );
    assert.equal(
      (
        (await fetch(`${stack.host.base}/api/batches/${batchId}`, { headers: { 'x-functions-key': LOCAL_KEY } }).then(
          (r) => r.json(),
        )) as { status: string }
      ).status,
      'accepted',
      'the batch waits',
    );

    await leases.create(); // the fix
    const one = await cli(['redrive', '--dead-letters', '--max', '1', '--json']);
    assert.equal(one.code, 0, one.stderr);
    const first = JSON.parse(one.stdout) as DeadLetterRedriveResult;
    assert.equal(first.moved, 1);
    assert.deepEqual(first.byEntity, { [DRAIN]: 1 });
    const rest = await cli(['redrive', '--dead-letters']);
    assert.equal(rest.code, 0, rest.stderr);
    assert.match(rest.stdout, /^resubmitted 1 dead letter\(s\) \(work-detected\/Subscriptions\/drain: 1\); 0 kept$/m);

    await stack.host.until(`batch ${batchId} completed`, 60_000, async () => {
      const s = (await (
        await fetch(`${stack.host.base}/api/batches/${batchId}`, { headers: { 'x-functions-key': LOCAL_KEY } })
      ).json()) as { status: string };
      return s.status === 'completed' ? true : undefined;
    });
    const report = (await (
      await fetch(`${stack.host.base}/api/batches/${batchId}/report`, { headers: { 'x-functions-key': LOCAL_KEY } })
    ).json()) as Report;
    assert.deepEqual(report.rows, expectedReport(txns).rows);
    const well = await healthOf();
    assert.equal(well.body.deadLetters?.total, 0, 'the redrive recounted');
    assert.equal(well.body.status, 'ok');
  });

  test('the command line: --entity needs --dead-letters, which excludes --queue and --batch (usage errors, exit 2)', async () => {
    for (const args of [
      ['redrive', '--entity', 'batch-watchdog'],
      ['redrive', '--dead-letters', '--queue', 'work-0'],
      ['redrive', '--dead-letters', '--batch', 'b-1'],
    ]) {
      const r = await cli(args);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /--entity <entity>' needs '--dead-letters'|cannot be used with/);
    }
    const unknown = await cli(['redrive', '--dead-letters', '--entity', 'nope', '--json']);
    assert.equal(unknown.code, 3, 'refused by the app (400)');
    assert.match(unknown.stdout, /entity must be one of work-detected\/Subscriptions\/drain/);
  });
});
