/**
 * One real Azurite per test file, and per-test settings with their own name prefix so
 * tests never see each other's queues or containers.
 */
import { randomBytes } from 'node:crypto';

import { type Azurite, startAzurite } from '../../local/azurite';
import { loadSettings, type Settings } from '../../shared/config/settings';
import type { WorkDetected } from '../../shared/notify/events';
import { Runtime, type RuntimeOptions } from '../../shared/runtime';
import { CapturingPublisher } from './capturing-publisher';

let azurite: Azurite | undefined;

export async function storageUp(): Promise<Azurite> {
  azurite ??= await startAzurite();
  return azurite;
}

export async function storageDown(): Promise<void> {
  await azurite?.stop();
  azurite = undefined;
}

export function uniquePrefix(): string {
  return `t${randomBytes(4).toString('hex')}-`;
}

/** Settings for a test: Azurite's connection, a fresh prefix, fast back-off unless overridden. */
export function testSettings(env: Record<string, string> = {}): Settings {
  if (!azurite) throw new Error('call storageUp() in before()');
  return loadSettings({
    StorageConnection: azurite.connectionString,
    PUSHDRAIN_NAME_PREFIX: uniquePrefix(),
    PUSHDRAIN_MIN_IDLE_MS: '10',
    PUSHDRAIN_MAX_IDLE_MS: '200',
    ...env,
  });
}

export interface TestRuntime {
  rt: Runtime;
  events: CapturingPublisher;
  /** Same storage, own meter: what the test itself reads does not count against the app. */
  observer: Runtime;
}

const open = new Set<Runtime>();

export async function testRuntime(env: Record<string, string> = {}, options: RuntimeOptions = {}): Promise<TestRuntime> {
  const events = new CapturingPublisher();
  const settings = testSettings(env);
  const rt = new Runtime(settings, { publisher: events, log: quietLog, ...options });
  const observer = new Runtime(settings, { publisher: new CapturingPublisher(), log: quietLog });
  open.add(rt);
  open.add(observer);
  await rt.ensureStorage();
  return { rt, events, observer };
}

/** For afterEach: fails the test that left a runtime open. */
export async function closeRuntimes(): Promise<number> {
  const n = open.size;
  for (const rt of open) await rt.close();
  open.clear();
  return n;
}

export const quietLog = {
  info: (): void => {},
  warn: (): void => {},
  error: (m: string): void => console.error(m),
};

export type { WorkDetected };
