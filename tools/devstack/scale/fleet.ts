/**
 * Several local instances of the app as competing consumers on one Azurite and one broker,
 * started and stopped by the ScaleController from the subscriptions' active counts
 * (`npm start -- --instances auto`, and the bench's scale-out scenario).
 */

import { SUBSCRIPTIONS, TOPIC } from '../../../shared/names';
import { serviceBusOptions } from '../host/host-json';
import { findRepoRoot } from '../host/registry';
import type { Broker } from '../servicebus/broker';
import { type Decision, type Fleet, type PlatformRule, ScaleController } from './controller';
import { type InstanceActivity, JOINS_FLEET, LocalInstance } from './instance';

/** An instance's part of the work, as its GET /api/health reported it. */
interface Share {
  name: string;
  /** ms since the fleet started. */
  startedAtMs: number;
  stoppedAtMs?: number;
  /** 0 after a graceful stop; null when it had to be killed. */
  exitCode?: number | null;
  activity: InstanceActivity | undefined;
}

export interface FleetOptions {
  broker: Pick<Broker, 'counts'>;
  /** Connections (external to the instances) and PUSHDRAIN_* settings for every instance. */
  env: Record<string, string>;
  /** The first instance's HTTP port (the others pick free ones); 0 for any. */
  firstPort?: number;
  rule: PlatformRule;
  /** How often the controller decides. @defaultValue 1000 */
  intervalMs?: number;
  echo?: (line: string) => void;
  log?: (line: string) => void;
}

export interface RunningFleet {
  readonly decisions: readonly Decision[];
  /** Every instance that ran, with its latest report. */
  shares(): Share[];
  /** The first instance's URL (the HTTP entry point while it runs). */
  readonly entryUrl: string | undefined;
  size(): number;
  /** Stops deciding, asks each instance for its final report, and stops them all. */
  stop(): Promise<Share[]>;
}

/** host.json's maxConcurrentCalls: the platform's target executions per instance. */
export function targetPerInstance(root: string = findRepoRoot(__dirname)): number {
  return serviceBusOptions(root).maxConcurrentCalls;
}

/** The app's Service Bus triggered functions on the topic, by subscription (drain, aggregate, scale). */
export const SUBSCRIPTION_PATHS = Object.fromEntries(
  Object.values(SUBSCRIPTIONS).map((s) => [s.name, `${TOPIC}/Subscriptions/${s.name}`]),
);

/** The final report of a retiring instance: asked for this many times, each waiting this long. */
const FINAL_REPORT_ATTEMPTS = 3;
const FINAL_REPORT_TIMEOUT_MS = 10_000;

class LocalFleet implements Fleet {
  readonly live: LocalInstance[] = [];
  readonly shares = new Map<string, Share>();
  private counter = 0;
  private readonly stopping = new Set<Promise<void>>();
  private readonly t0 = Date.now();

  constructor(private readonly options: FleetOptions) {}

  activeCounts(): Record<string, number> {
    return Object.fromEntries(
      Object.entries(SUBSCRIPTION_PATHS).map(([name, path]) => {
        const c = this.options.broker.counts(path);
        return [name, c ? c.available + c.locked : 0];
      }),
    );
  }

  instances(): readonly LocalInstance[] {
    return this.live;
  }

  async add(count: number): Promise<void> {
    const starting = Array.from({ length: count }, () => {
      const name = `i${++this.counter}`;
      const first = this.counter === 1;
      const port = first ? (this.options.firstPort ?? 0) : 0;
      // Only the first instance recovers at start-up: the others join its live work.
      const env = first ? this.options.env : { ...this.options.env, [JOINS_FLEET]: '1' };
      return LocalInstance.start(name, { env, port, ...(this.options.echo ? { echo: this.options.echo } : {}) });
    });
    for (const result of await Promise.allSettled(starting)) {
      if (result.status === 'rejected') {
        this.options.log?.(`an instance failed to start: ${(result.reason as Error).message}`);
        continue;
      }
      this.live.push(result.value);
      // Instances come and go: each one's own health URL is how to see its share of the work.
      this.options.log?.(`instance ${result.value.name} started: ${result.value.baseUrl}/api/health`);
      this.shares.set(result.value.name, {
        name: result.value.name,
        startedAtMs: result.value.startedAt - this.t0,
        activity: undefined,
      });
    }
  }

  /** Takes the instance out of the fleet at once; its graceful stop runs on without holding up decisions. */
  remove(name: string): Promise<void> {
    const i = this.live.findIndex((x) => x.name === name);
    if (i < 0) return Promise.resolve();
    const [instance] = this.live.splice(i, 1);
    const stopping = this.retire(instance!).finally(() => this.stopping.delete(stopping));
    this.stopping.add(stopping);
    return Promise.resolve();
  }

  /** Stops the rest and waits for every stop still under way. */
  async stopAll(): Promise<void> {
    await Promise.all(this.live.splice(0).map((i) => this.retire(i)));
    await Promise.allSettled([...this.stopping]);
  }

  /**
   * Reads the instance's final report, then stops it gracefully. A loaded machine can hold an
   * answer past one read's timeout, and the controller's last reading may predate the instance's
   * last chunks: the final report is asked for until it comes (bounded).
   */
  async retire(instance: LocalInstance): Promise<void> {
    const share = this.shares.get(instance.name);
    let last: InstanceActivity | undefined;
    for (let attempt = 0; attempt < FINAL_REPORT_ATTEMPTS && !last; attempt++)
      last = await instance.activity(FINAL_REPORT_TIMEOUT_MS);
    if (share && last) share.activity = last;
    else if (share)
      this.options.log?.(`instance ${instance.name} gave no final report: its share is the last one seen`);
    const code = await instance.stop();
    if (share) {
      share.stoppedAtMs = Date.now() - this.t0;
      share.exitCode = code;
    }
  }

  note(name: string, a: InstanceActivity | undefined): void {
    const share = this.shares.get(name);
    if (share && a) share.activity = a;
  }
}

export function runFleet(options: FleetOptions): RunningFleet {
  const fleet = new LocalFleet(options);
  const controller = new ScaleController(fleet, options.rule);
  const log = options.log ?? ((): void => {});
  let stopping = false;
  let loop: Promise<void> = Promise.resolve();
  const tick = async (): Promise<void> => {
    const d = await controller.tick();
    for (const i of fleet.live) fleet.note(i.name, controller.lastActivity(i.name));
    if (d.added > 0 || d.removed.length > 0) {
      log(
        `scale controller +${(d.atMs / 1000).toFixed(1)} s: active ${d.active} (drain ${d.drainActive}) → desired ${d.desired}; instances ${d.before} → ${d.before + d.added - d.removed.length}${d.added ? ` (+${d.added})` : ''}${d.removed.length ? ` (stopped idle ${d.removed.join(', ')})` : ''}`,
      );
    }
  };
  loop = (async () => {
    // Bounded by stop(); one decision per interval, never two at once.
    while (!stopping) {
      const started = Date.now();
      try {
        await tick();
      } catch (e) {
        log(`scale controller: ${(e as Error).message}`);
      }
      await new Promise((r) => setTimeout(r, Math.max(0, (options.intervalMs ?? 1000) - (Date.now() - started))));
    }
  })();
  return {
    decisions: controller.decisions,
    shares: () => [...fleet.shares.values()],
    get entryUrl() {
      return fleet.live.find((i) => i.name === 'i1')?.baseUrl;
    },
    size: () => fleet.live.length,
    stop: async () => {
      stopping = true;
      await loop;
      await fleet.stopAll();
      return [...fleet.shares.values()];
    },
  };
}
