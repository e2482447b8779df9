/**
 * Waits for batches to complete by reading their manifests through an observer runtime: its own
 * clients and meter, so watching costs the design under test nothing. The completion time is
 * the manifest's own `completedAt`, written by the app, so the polling interval only delays
 * noticing it, never the figure.
 */
import { PushdrainApp } from '../../../shared/app';
import type { ManifestStore } from '../../../shared/batch/manifest-store';
import type { Settings } from '../../../shared/config/settings';
import type { BatchUsage } from '../../../shared/cost/batch-usage';
import { composeApp } from '../../../shared/create-app';
import { benchLog } from './log';
import { NullPublisher } from './null-publisher';

export interface Completed {
  batchId: string;
  submittedAt: number;
  completedAt: number;
  transactions: number;
}

const POLL_MS = 200;

/** Time ran out with a batch still open (as opposed to a batch that failed). */
export class CompletionTimeout extends Error {
  override readonly name = 'CompletionTimeout';
}

export class CompletionWatcher {
  private readonly observer: PushdrainApp;
  private readonly manifests: ManifestStore;
  /** The watched app's entity prefix: a timeout names the app (and so the design) it was waiting on. */
  private readonly prefix: string;

  constructor(settings: Settings) {
    this.prefix = settings.namePrefix;
    const parts = composeApp(settings, { publisher: new NullPublisher(), log: benchLog });
    this.observer = new PushdrainApp(parts);
    this.manifests = parts.manifests;
  }

  get runtime(): PushdrainApp {
    return this.observer;
  }

  /**
   * Resolves when every batch is completed; throws if one failed or time runs out. Batches
   * usually finish in order, so it watches the oldest open one and only then looks further:
   * a few reads a second, whatever the number of batches.
   */
  async wait(batchIds: readonly string[], timeoutMs: number): Promise<Completed[]> {
    const deadline = Date.now() + timeoutMs;
    const open = [...batchIds];
    const done: Completed[] = [];
    while (open.length > 0) {
      const id = open[0] as string;
      const got = await this.manifests.read(id);
      const m = got?.manifest;
      if (m?.state === 'failed') throw new Error(`batch ${id} failed: ${m.error ?? 'no reason recorded'}`);
      if (m?.state === 'completed' && m.completedAt) {
        done.push({
          batchId: id,
          submittedAt: Date.parse(m.submittedAt),
          completedAt: Date.parse(m.completedAt),
          transactions: m.transactions,
        });
        open.shift();
        continue;
      }
      if (Date.now() >= deadline) {
        throw new CompletionTimeout(
          `timed out after ${timeoutMs} ms: ${open.length} of ${batchIds.length} batches of app ${this.prefix || '(no prefix)'} not completed (${id}: ${m ? `${m.state} at ${m.acceptedAt ?? 'no accept'}, notification ${m.notification}, ${m.done.length}/${m.chunks} chunks, ${m.failed.length} failed` : 'no manifest'})`,
        );
      }
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
    return done;
  }

  /** The manifests' usage of these batches (what the app attributed to each), with their sizes. */
  async usage(batchIds: readonly string[]): Promise<{ transactions: number; usage: BatchUsage | undefined }[]> {
    return Promise.all(
      batchIds.map(async (id) => {
        const m = (await this.manifests.read(id))?.manifest;
        return { transactions: m?.transactions ?? 0, usage: m?.usage };
      }),
    );
  }

  close(): Promise<void> {
    return this.observer.close();
  }
}
