/**
 * One real Azurite per test file, and per-test settings with their own name prefix so
 * tests never see each other's queues or containers.
 */
import { randomBytes } from 'node:crypto';
import { after, afterEach, before } from 'node:test';

import type { ContainerClient } from '@azure/storage-blob';
import type { QueueClient } from '@azure/storage-queue';

import type { PushdrainApp } from '../../shared/app';
import type { AppOptions } from '../../shared/compose/app-options';
import type { AppParts } from '../../shared/compose/app-parts';
import { loadSettings, type Settings } from '../../shared/config/settings';
import { type ContainerKey, entityNames } from '../../shared/names';
import { AzureBlobStore } from '../../shared/storage/azure-blob-store';
import { createStorageClients } from '../../shared/storage/clients';
import { BlobLeaseSlots } from '../../shared/storage/lease-slots';
import { StorageMeter } from '../../shared/storage/meter';
import { type Azurite, startAzurite } from '../../tools/devstack/azurite';
import { provisionStorage } from '../../tools/devstack/provision-storage';
import { startStorageProxy, type StorageProxy } from '../../tools/testkit/storage-proxy';
import { CapturingPublisher } from './capturing-publisher';
import { composedApp } from './composed-app';

let azurite: Azurite | undefined;
// The promise, not the result: two callers racing (e.g. two before hooks) share one emulator.
let starting: Promise<Azurite> | undefined;

export async function storageUp(): Promise<Azurite> {
  starting ??= startAzurite();
  azurite = await starting;
  return azurite;
}

export async function storageDown(): Promise<void> {
  const pending = starting;
  starting = undefined;
  azurite = undefined;
  if (pending) await (await pending).stop();
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

/** The SDK clients behind a test's names, for what no port offers (clearing a queue, deleting one). */
export interface RawStorage {
  queue(name: string): QueueClient;
  container(key: ContainerKey): ContainerClient;
}

export function rawStorage(settings: Settings): RawStorage {
  const names = entityNames(settings.namePrefix, settings.tuning.partitions);
  const clients = createStorageClients(settings.storage, new StorageMeter());
  return {
    queue: (name) => clients.queues.getQueueClient(name),
    container: (key) => clients.blobs.getContainerClient(names.container(key)),
  };
}

/** Lease-based drain slots over the `leases` container of these settings, as the composition root builds them, with a meter of their own. */
export function leaseSlots(settings: Settings, perQueue: number): BlobLeaseSlots & { meter: StorageMeter } {
  const names = entityNames(settings.namePrefix, settings.tuning.partitions);
  const meter = new StorageMeter();
  return Object.assign(
    new BlobLeaseSlots(
      new AzureBlobStore(createStorageClients(settings.storage, meter).blobs, names.container),
      perQueue,
      quietLog,
    ),
    { meter },
  );
}

export interface TestRuntime {
  app: PushdrainApp;
  /** What the app was composed from, for a test that drives or inspects one step itself. */
  parts: AppParts;
  events: CapturingPublisher;
  /** Same storage, own meter: what the test itself reads does not count against the app. */
  observer: PushdrainApp;
  /** What the observer was composed from: its manifests, blobs and queues. */
  observerParts: AppParts;
  raw: RawStorage;
}

const open = new Set<PushdrainApp>();

export async function testRuntime(env: Record<string, string> = {}, options: AppOptions = {}): Promise<TestRuntime> {
  const events = new CapturingPublisher();
  const settings = testSettings(env);
  const { app, parts } = composedApp(settings, { publisher: events, log: quietLog, ...options });
  const { app: observer, parts: observerParts } = composedApp(settings, {
    publisher: new CapturingPublisher(),
    log: quietLog,
  });
  open.add(app);
  open.add(observer);
  await provisionStorage(settings);
  return { app, parts, events, observer, observerParts, raw: rawStorage(settings) };
}

/** Closes every app a test made; throws if one still had a drain running (a leaked drain). */
export async function closeRuntimes(): Promise<void> {
  const busy = [...open].filter((app) => app.drainsInProgress > 0).length;
  for (const app of open) await app.close();
  open.clear();
  if (busy > 0) throw new Error(`${busy} app(s) still had a drain in progress when the test ended`);
}

/** The usual hooks of an Azurite test file: one emulator per file, runtimes checked after each test. */
export function useStorage(): void {
  before(async () => {
    await storageUp();
  });
  after(async () => {
    try {
      await closeRuntimes();
    } finally {
      await storageDown(); // always, or a live emulator keeps the test process from exiting
    }
  });
  afterEach(async () => {
    await closeRuntimes();
  });
}

export interface ProxiedStorage {
  /** The fault proxy in front of this file's Azurite; its faults are cleared after each test. */
  readonly proxy: StorageProxy;
  /** A connection string whose Storage traffic goes through the proxy. */
  readonly connectionString: string;
}

/** useStorage(), plus a fault proxy in front of the emulator (stalls bounded at 2 s). */
export function useProxiedStorage(): ProxiedStorage {
  useStorage();
  let proxy: StorageProxy | undefined;
  let connectionString = '';
  before(async () => {
    const azurite = await storageUp(); // already up: useStorage's hook ran first
    proxy = await startStorageProxy(
      { blobPort: azurite.blobPort, queuePort: azurite.queuePort },
      { stallMaxMs: 2_000 },
    );
    connectionString = proxy.connectionString(azurite.connectionString);
  });
  after(async () => {
    await proxy?.close();
  });
  afterEach(() => {
    proxy?.clear();
  });
  return {
    get proxy(): StorageProxy {
      if (!proxy) throw new Error('the storage proxy starts in before()');
      return proxy;
    },
    get connectionString(): string {
      return connectionString;
    },
  };
}

export const quietLog = {
  info: (): void => {},
  warn: (): void => {},
  error: (m: string): void => console.error(m),
};
