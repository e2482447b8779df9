/**
 * Runs async jobs with at most `limit` in flight. The first failure is kept and rethrown
 * by the next `run` or by `drain`, so a producer loop stops feeding a failed pool.
 */
export class Pool {
  private readonly inflight = new Set<Promise<void>>();
  private failure: { error: unknown } | undefined;

  constructor(private readonly limit: number) {}

  /** Waits for room, then starts `job`. */
  async run(job: () => Promise<void>): Promise<void> {
    while (this.inflight.size >= this.limit) await Promise.race(this.inflight);
    this.check();
    const p: Promise<void> = job()
      .catch((e: unknown) => {
        this.failure ??= { error: e };
      })
      .finally(() => this.inflight.delete(p));
    this.inflight.add(p);
  }

  /** Waits for every job; throws the first failure. */
  async drain(): Promise<void> {
    while (this.inflight.size > 0) await Promise.race(this.inflight);
    this.check();
  }

  private check(): void {
    if (this.failure) throw this.failure.error;
  }
}

/** Maps with bounded concurrency, keeping order. */
export async function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const out = new Array<R>(items.length);
  const pool = new Pool(limit);
  for (let i = 0; i < items.length; i++) {
    const item = items[i] as T;
    await pool.run(async () => {
      out[i] = await fn(item, i);
    });
  }
  await pool.drain();
  return out;
}
