/**
 * A kill between the ingest's accept and its WorkDetected publish. The accept is written first
 * and the `202` only after both, so such a kill leaves an accepted batch that nobody woke and a
 * client that got no answer. Two ways back, each shown on real Azurite: the client's retry with
 * the same Idempotency-Key (the replay wakes the batch again), and, for a client that never
 * retries, the sweep's stall check (it finds the batch in the open index, wakes its queues and
 * drains them itself); the watchdog check scheduled before the accept is a third.
 *
 * The process that dies is an app whose publisher never returns from that publish, as a killed
 * process never does: nothing after the publish runs. Another app on the same Storage is the
 * process that comes after it.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { Report } from '../../shared/billing/report';
import type { WorkDetected } from '../../shared/bus/work-detected';
import type { AppParts } from '../../shared/compose/app-parts';
import { batchIdFor } from '../../shared/layout';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { expectedReport } from '../../tools/testkit/oracle';
import { CapturingPublisher } from '../support/capturing-publisher';
import { movableClock } from '../support/clock';
import { composedApp } from '../support/composed-app';
import { completed, post, pump, report } from '../support/invoke';
import { quietLog, testRuntime, testSettings, uniquePrefix, useStorage } from '../support/storage';

useStorage();

type Env = Record<string, string>;
/** Both apps on the same names: the second is the process after the kill. */
const env = (): Env => ({
  PUSHDRAIN_CHUNK_SIZE: '100',
  PUSHDRAIN_STALL_SECONDS: '120',
  PUSHDRAIN_NAME_PREFIX: uniquePrefix(),
});

/** A publisher in a process killed as it sends the drainers' wake-up: that publish never returns. */
class KilledAtWake extends CapturingPublisher {
  killed = false;
  private release: () => void = () => undefined;
  private readonly gate = new Promise<void>((r) => (this.release = r));

  override publish(events: readonly WorkDetected[], delayMs: number): Promise<void> {
    if (delayMs > 0 || !events.some((e) => e.role === 'input')) return super.publish(events, delayMs);
    this.killed = true;
    return this.gate.then(() => Promise.reject(new Error('the process was killed')));
  }

  /** Ends the test: the stuck publish fails, so the dead app's request can be awaited and closed. */
  bury(): void {
    this.release();
  }
}

/**
 * Posts to an app that dies at its wake-up; resolves once it has died there. `bury()` ends the
 * test: the stuck publish fails, so the dead app's request settles and the app can be closed.
 */
async function killedAtWake(env: Env, body: Buffer, key: string): Promise<{ bury(): Promise<void> }> {
  const publisher = new KilledAtWake();
  const dead = composedApp(testSettings(env), { publisher, log: quietLog });
  const cut = post(dead.app, body, { 'idempotency-key': key }).catch((e: unknown) => e);
  for (let i = 0; i < 300 && !publisher.killed; i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(publisher.killed, 'the ingest reached its wake-up');
  assert.equal(publisher.checks.length, 1, 'the watchdog check was scheduled before the accept');
  return {
    bury: async () => {
      publisher.bury();
      await cut;
      await dead.app.close();
    },
  };
}

async function acceptedBatchId(parts: AppParts, key: string): Promise<string> {
  const id = batchIdFor(key, undefined);
  const m = (await parts.manifests.read(id))?.manifest;
  assert.equal(m?.state, 'accepted', 'the accept was written before the wake-up');
  assert.equal(m.done.length, 0);
  return id;
}

describe('a kill between the accept and the wake-up', () => {
  test("the client's retry with its Idempotency-Key gets the 202 and wakes the batch, which completes", async () => {
    const txns = generate(250, 4801, 9);
    const body = toNdjson(txns);
    const settings = env();
    const next = await testRuntime(settings);
    const dead = await killedAtWake(settings, body, 'cut-at-wake-1');
    const batchId = await acceptedBatchId(next.parts, 'cut-at-wake-1');
    assert.equal(next.events.all.length, 0);

    const again = await post(next.app, body, { 'idempotency-key': 'cut-at-wake-1' });
    assert.equal(again.status, 202);
    assert.equal((again.jsonBody as { batchId: string }).batchId, batchId);
    const woken = next.events.all.map((c) => c.event);
    assert.ok(
      woken.some((e) => e.role === 'input' && e.batchId === batchId),
      'the replay published the wake-up the kill cut off',
    );
    await pump(next.app, next.events, () => completed(next.observer, batchId));
    assert.deepEqual(((await report(next.observer, batchId)).jsonBody as Report).totals, expectedReport(txns).totals);
    await dead.bury();
  });

  test('a client that never retries: the sweep finds the accepted batch stalled, wakes and drains it', async () => {
    const txns = generate(250, 4802, 9);
    const settings = env();
    const time = movableClock();
    const next = await testRuntime(settings, { clock: time.clock });
    const dead = await killedAtWake(settings, toNdjson(txns), 'cut-at-wake-2');
    const batchId = await acceptedBatchId(next.parts, 'cut-at-wake-2');

    const early = await next.app.sweep();
    assert.deepEqual(early.recovered, [{ batchId, kind: 'progressing' }], 'inside the stall threshold: left alone');
    time.advance(121_000);
    const { recovered } = await next.app.sweep();
    assert.deepEqual(recovered, [{ batchId, kind: 'repaired', reenqueued: 0 }], 'the pointers were enqueued');
    assert.ok(await completed(next.observer, batchId), 'completed by the sweep alone');
    assert.deepEqual(((await report(next.observer, batchId)).jsonBody as Report).totals, expectedReport(txns).totals);
    await dead.bury();
  });
});
