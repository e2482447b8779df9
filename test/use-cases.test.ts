// unit lane: logic only
/**
 * The façade applies each use case's needs (shared/use-cases.ts) itself: a use case that needs
 * Storage provisions first (once), one that is work is counted as work while it runs, and every
 * public member of the façade has its entry, so a new one cannot skip the table.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { type AppParts, PushdrainApp } from '../shared/app';
import { USE_CASES, type UseCaseName, UseCaseRunner } from '../shared/use-cases';

/**
 * A runner over fakes, and a run that logs its name as it starts (with " as work" when it runs
 * inside during()), beside each provisioning attempt.
 */
function rig(failProvisions = 0): {
  run: (name: UseCaseName) => Promise<void>;
  log: string[];
} {
  const log: string[] = [];
  let inWork = 0;
  let fails = failProvisions;
  const runner = new UseCaseRunner(
    {},
    () => {
      log.push('provision');
      return fails-- > 0 ? Promise.reject(new Error('storage down')) : Promise.resolve();
    },
    {
      during: async <T>(work: () => Promise<T>): Promise<T> => {
        inWork++;
        try {
          return await work();
        } finally {
          inWork--;
        }
      },
    },
  );
  const run = (name: UseCaseName): Promise<void> =>
    runner.run(name, () => {
      log.push(`${name}${inWork > 0 ? ' as work' : ''}`);
      return Promise.resolve();
    });
  return { run, log };
}

describe('use cases and their needs', () => {
  test('Storage work provisions first, once, and runs as work', async () => {
    const { run, log } = rig();
    await run('drain');
    await run('submit');
    assert.deepEqual(log, ['provision', 'drain as work', 'submit as work']);
  });

  test('a read provisions but is not work; Service Bus work is work without provisioning; a local one needs neither', async () => {
    const { run, log } = rig();
    await run('redriveDeadLetters');
    await run('sendTestEvent');
    await run('status');
    await run('report');
    assert.deepEqual(log, ['redriveDeadLetters as work', 'sendTestEvent', 'provision', 'status', 'report']);
  });

  test('a failed provisioning fails the use case without running it, and the next one tries again', async () => {
    const { run, log } = rig(1);
    await assert.rejects(run('status'), /storage down/);
    await run('status');
    assert.deepEqual(log, ['provision', 'provision', 'status']);
  });

  test('every public member of the façade is a use case in the table, and every entry a member', () => {
    const members = Object.getOwnPropertyNames(PushdrainApp.prototype).filter((n) => n !== 'constructor');
    assert.deepEqual([...members].sort(), Object.keys(USE_CASES).sort());
  });

  test('through the façade: status, timeline and report provision first; a read is not counted as work', async () => {
    const calls: string[] = [];
    let working = 0;
    const parts = {
      settings: { tuning: { maxBodyBytes: 1 } },
      provision: () => {
        calls.push('provision');
        return Promise.resolve();
      },
      observer: {
        during: async <T>(work: () => Promise<T>): Promise<T> => {
          working++;
          try {
            return await work();
          } finally {
            working--;
          }
        },
      },
      reader: {
        status: (id: string) => (calls.push(`status ${id} work=${working}`), Promise.resolve(undefined)),
        timeline: (id: string) => (calls.push(`timeline ${id}`), Promise.resolve(undefined)),
        report: (id: string) => (calls.push(`report ${id}`), Promise.resolve({ kind: 'not_found' as const })),
      },
      redriver: {
        deadLetters: () => (calls.push(`dead letters work=${working}`), Promise.resolve({ moved: 0 })),
      },
    } as unknown as AppParts;
    const app = new PushdrainApp(parts);
    await app.status('b1');
    await app.timeline('b1');
    await app.report('b1');
    await app.redriveDeadLetters({});
    assert.deepEqual(calls, ['provision', 'status b1 work=0', 'timeline b1', 'report b1', 'dead letters work=1']);
  });
});
