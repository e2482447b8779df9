/**
 * Keeps a child process of `npm start` running (the embedded Azurite): when it exits without
 * being asked to, one line names the part and its exit signal or code, the part is started again
 * the way it was started at first (for Azurite: the same data folder and ports, after waiting for
 * the dead one's last save, as at start-up), and the app is told it is down meanwhile (health is
 * red; for Azurite, its Storage attempts also wait for the restart, see
 * shared/storage/endpoint-outages.ts). A part that keeps dying (`maxDeaths` within `windowMs`) is given up: `giveUp` stops
 * `npm start` with a clear message and a non-zero exit.
 */

/** How a child ended: its exit code, or the signal that killed it. */
interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A running child the supervisor can watch and stop. */
export interface Supervisable {
  readonly pid: number;
  /** Called once when the child exits by itself; never after stop(). */
  onExit(listener: (exit: ChildExit) => void): void;
  stop(): Promise<void>;
}

export interface SupervisorOptions<T extends Supervisable> {
  /** The part's name in the log, e.g. "Azurite". */
  part: string;
  /** The first incarnation, already started. */
  first: T;
  /** Starts it again, the same way (same folder, same ports). */
  restart(): Promise<T>;
  log(line: string): void;
  /** The part is down (true) or back (false): health shows it. */
  down(isDown: boolean): void;
  /** It kept dying: stop everything and exit non-zero. */
  giveUp(message: string): void;
  /** @defaultValue 3 */
  maxDeaths?: number;
  /** @defaultValue 60000 */
  windowMs?: number;
  /** Between failed restart attempts. @defaultValue 1000 */
  retryDelayMs?: number;
  now?: () => number;
}

export interface Supervised<T> {
  /** The current incarnation. */
  readonly current: T;
  /** Deaths seen so far (restarts that failed count too). */
  readonly deaths: number;
  /** Stops supervising, then the child. */
  stop(): Promise<void>;
}

function describeExit(exit: ChildExit): string {
  return exit.signal ? `signal ${exit.signal}` : `code ${exit.code ?? 'unknown'}`;
}

export function supervise<T extends Supervisable>(o: SupervisorOptions<T>): Supervised<T> {
  const maxDeaths = o.maxDeaths ?? 3;
  const windowMs = o.windowMs ?? 60_000;
  const now = o.now ?? Date.now;
  let current = o.first;
  let stopped = false;
  let restarting: Promise<void> | undefined;
  const deaths: number[] = [];
  let total = 0;

  /** Records a death; true when the part is given up. */
  const died = (what: string): boolean => {
    total++;
    const t = now();
    deaths.push(t);
    while (deaths.length > 0 && t - (deaths[0] as number) > windowMs) deaths.shift();
    if (deaths.length < maxDeaths) return false;
    stopped = true;
    o.giveUp(
      `${o.part} died ${deaths.length} times within ${Math.round(windowMs / 1000)} s (last: ${what}); stopping npm start. Look at its data folder and the messages above, then start again.`,
    );
    return true;
  };

  const watch = (child: T): void => {
    child.onExit((exit) => {
      if (stopped || child !== current) return;
      const what = describeExit(exit);
      o.log(`${o.part} (pid ${child.pid}) exited unexpectedly (${what}); restarting it`);
      o.down(true);
      if (died(what)) return;
      restarting = restartLoop();
    });
  };

  const restartLoop = async (): Promise<void> => {
    // Bounded: every failed attempt is a death, and maxDeaths of them give up.
    for (let attempt = 0; attempt < maxDeaths && !stopped; attempt++) {
      const t0 = now();
      try {
        const next = await o.restart();
        if (stopped) {
          await next.stop();
          return;
        }
        current = next;
        watch(next);
        o.down(false);
        o.log(`${o.part} restarted (pid ${next.pid}) in ${now() - t0} ms`);
        return;
      } catch (e) {
        const what = `restart failed: ${(e as Error).message.split('\n')[0]}`;
        o.log(`${o.part}: ${what}`);
        if (died(what)) return;
        await new Promise((r) => setTimeout(r, o.retryDelayMs ?? 1000));
      }
    }
  };

  watch(current);
  return {
    get current() {
      return current;
    },
    get deaths() {
      return total;
    },
    stop: async () => {
      stopped = true;
      await restarting;
      await current.stop();
    },
  };
}
