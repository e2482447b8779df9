/** What a test's prefix has in Storage: every blob and every queued message. */
import { CONTAINERS } from '../../shared/names';
import type { Runtime } from '../../shared/runtime';

export async function blobNames(rt: Runtime, keys: readonly (typeof CONTAINERS)[number][] = CONTAINERS.filter((k) => k !== 'leases')): Promise<string[]> {
  const out: string[] = [];
  for (const key of keys) {
    for await (const b of rt.ctx.container(key).listBlobsFlat()) out.push(`${key}/${b.name}`);
  }
  return out.sort();
}

/** Approximate message count per queue (Azurite's is exact; in-flight messages included). */
export async function queueDepths(rt: Runtime): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const q of rt.ctx.names.allQueues()) {
    const props = await rt.clients.queues.getQueueClient(q).getProperties();
    out[q] = props.approximateMessagesCount ?? 0;
  }
  return out;
}

export async function totalQueued(rt: Runtime): Promise<number> {
  return Object.values(await queueDepths(rt)).reduce((a, b) => a + b, 0);
}
