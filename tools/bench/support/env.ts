/**
 * What every scenario shares: one Azurite (a child process) and one development Service Bus
 * broker (in this process; it carries a few dozen tiny events per run, so its CPU is noise).
 * The broker serves the app's own entity list plus extra copies of the `work-detected` topic,
 * so several independent pushdrain apps can run side by side, each with its own topic.
 */
import { BlobServiceClient } from '@azure/storage-blob';
import { QueueServiceClient } from '@azure/storage-queue';

import { loadSettings, type Settings } from '../../../shared/config/settings';
import { TOPIC } from '../../../shared/names';
import { type Azurite, startAzurite } from '../../devstack/azurite';
import { type Broker, startBroker } from '../../devstack/servicebus/broker';
import { type EntitiesConfig, loadEntitiesConfig, type TopicConfig } from '../../devstack/servicebus/config';

export interface BenchEnv {
  azurite: Azurite;
  broker: Broker;
  /**
   * A copy of the work-detected topic that no other app has used: a stopped app leaves its
   * hand-over events behind in its subscriptions, and they must not wake the next app.
   */
  takeTopic(): string;
  /** Unmetered clients for set-up and clean-up that must not count against any design. */
  admin: { blobs: BlobServiceClient; queues: QueueServiceClient };
  stop(): Promise<void>;
}

function withTopicCopies(base: EntitiesConfig, copies: number): { entities: EntitiesConfig; names: string[] } {
  const original = base.topics?.find((t) => t.name === TOPIC);
  if (!original) throw new Error(`the entity list has no topic ${TOPIC}`);
  const names = [TOPIC, ...Array.from({ length: copies }, (_, i) => `bench-wd-${i + 1}`)];
  const extra: TopicConfig[] = names.slice(1).map((name) => ({ ...original, name }));
  return { entities: { ...base, topics: [...(base.topics ?? []), ...extra] }, names };
}

export async function startEnv(topicCopies: number): Promise<BenchEnv> {
  const { entities, names } = withTopicCopies(loadEntitiesConfig(), topicCopies);
  const [azurite, broker] = await Promise.all([startAzurite(), startBroker({ entities })]);
  const free = [...names];
  return {
    azurite,
    broker,
    takeTopic: () => {
      const t = free.shift();
      if (t === undefined) throw new Error(`all ${names.length} work-detected topics have been used`);
      return t;
    },
    admin: adminClients(azurite.connectionString),
    stop: async () => {
      await broker.stop();
      await azurite.stop();
    },
  };
}

export function adminClients(connectionString: string): BenchEnv['admin'] {
  return {
    blobs: BlobServiceClient.fromConnectionString(connectionString),
    queues: QueueServiceClient.fromConnectionString(connectionString),
  };
}

/** Default tuning throughout: the bench measures the app as shipped. Only names differ (and `extra`: a scenario's feature settings, such as webhooks). */
export function appSettings(
  env: { storage: string; serviceBus?: string },
  prefix: string,
  extra: Record<string, string> = {},
): Settings {
  return loadSettings({
    StorageConnection: env.storage,
    ...(env.serviceBus ? { ServiceBusConnection: env.serviceBus } : {}),
    PUSHDRAIN_NAME_PREFIX: prefix,
    ...extra,
  });
}

/** Deletes an app's queues and containers, so Azurite stays small over a long bench. */
export async function removeApp(admin: BenchEnv['admin'], prefix: string): Promise<void> {
  const jobs: Promise<unknown>[] = [];
  for await (const q of admin.queues.listQueues({ prefix }))
    jobs.push(admin.queues.deleteQueue(q.name).catch(() => undefined));
  for await (const c of admin.blobs.listContainers({ prefix }))
    jobs.push(admin.blobs.deleteContainer(c.name).catch(() => undefined));
  await Promise.all(jobs);
}
