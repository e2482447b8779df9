/** What a test's prefix has in Storage: every blob and every queued message. */
import type { AppParts } from '../../shared/compose/app-parts';
import { type ContainerKey, CONTAINERS } from '../../shared/names';

export async function blobNames(
  parts: AppParts,
  keys: readonly ContainerKey[] = CONTAINERS.filter((k) => k !== 'leases'),
): Promise<string[]> {
  const out: string[] = [];
  for (const key of keys) {
    for await (const b of parts.blobs.list(key)) out.push(`${key}/${b.name}`);
  }
  return out.sort();
}

/** Approximate message count per queue (Azurite's is exact; in-flight messages included). */
export async function queueDepths(parts: AppParts): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const q of parts.names.allQueues()) out[q] = await parts.queues.depth(q);
  return out;
}

export async function totalQueued(parts: AppParts): Promise<number> {
  return Object.values(await queueDepths(parts)).reduce((a, b) => a + b, 0);
}
