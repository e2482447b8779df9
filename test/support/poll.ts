/** Waiting on something outside the test (a host, a broker, Azurite), bounded in time and in tries. */
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

type Probe<T> = () => T | undefined | Promise<T | undefined>;

async function poll<T>(probe: Probe<T>, timeoutMs: number, everyMs: number): Promise<T | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (let tries = Math.ceil(timeoutMs / everyMs) + 1; tries > 0; tries--) {
    const value = await probe();
    if (value !== undefined || Date.now() >= deadline) return value;
    await sleep(everyMs);
  }
  return undefined;
}

/** The probe's first value other than undefined; after `timeoutMs`, an error naming `what`, plus `context()` (a host's output, say). */
export async function until<T>(
  what: string,
  timeoutMs: number,
  probe: Probe<T>,
  options: { everyMs?: number; context?: () => string } = {},
): Promise<T> {
  const value = await poll(probe, timeoutMs, options.everyMs ?? 100);
  if (value === undefined)
    throw new Error(
      `timed out after ${timeoutMs} ms waiting for ${what}${options.context ? `\n${options.context()}` : ''}`,
    );
  return value;
}

/** Polls `check` every 20 ms until it returns true or `timeoutMs` passes; returns the last result. */
export async function waitFor(check: () => boolean, timeoutMs = 5000): Promise<boolean> {
  return (await poll(() => (check() ? true : undefined), timeoutMs, 20)) ?? false;
}
