/**
 * The façade applies each use case's needs (shared/use-cases.ts) itself: one that is work is
 * counted as work while it runs, none provisions anything first (infra/ does), and every public
 * member of the façade has its entry, so a new one cannot skip the table.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { PushdrainApp } from '../../../shared/app';
import type { AppParts } from '../../../shared/compose/app-parts';
import { USE_CASES, type UseCaseName, UseCaseRunner } from '../../../shared/use-cases';

/** A runner over fakes, and a run that logs its name as it starts (with " as work" when it runs inside during()). */
function rig(): {
  run: (name: UseCaseName) => Promise<void>;
  log: string[];
} {
  const log: string[] = [];
  let inWork = 0;
  const runner = new UseCaseRunner(
    {},
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
  test('Storage work and Service Bus work run as work; a read and a local one do not', async () => {
    const { run, log } = rig();
    await run('drain');
    await run('submit');
    await run('redriveDeadLetters');
    await run('sendTestEvent');
    await run('status');
    await run('report');
    assert.deepEqual(log, [
      'drain as work',
      'submit as work',
      'redriveDeadLetters as work',
      'sendTestEvent',
      'status',
      'report',
    ]);
  });

  test("no use case provisions Storage first: a cold instance's first request is its work", () => {
    assert.ok(!('ready' in USE_CASES), 'the façade has no provisioning step');
    for (const [name, needs] of Object.entries(USE_CASES))
      assert.deepEqual(Object.keys(needs).sort(), ['local', 'work'], name);
  });

  test('every public member of the façade is a use case in the table, and every entry a member', () => {
    const members = Object.getOwnPropertyNames(PushdrainApp.prototype).filter((n) => n !== 'constructor');
    assert.deepEqual([...members].sort(), Object.keys(USE_CASES).sort());
  });

  test('through the façade: status, timeline and report go straight to their reader; a read is not counted as work', async () => {
    const calls: string[] = [];
    let working = 0;
    const parts = {
      settings: { tuning: { maxBodyBytes: 1 } },
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
    assert.deepEqual(calls, ['status b1 work=0', 'timeline b1', 'report b1', 'dead letters work=1']);
  });
});
