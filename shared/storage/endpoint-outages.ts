/**
 * Storage endpoints known to be down for a moment, and the per-attempt policy that waits for
 * them. The local stack's supervisor says so while it restarts its embedded Azurite (the same
 * folder and ports, a second or a few): an attempt then waits until the endpoint is back instead
 * of meeting a refused connection. Without it the SDK's four quick tries (about 2 s in all) were
 * spent in the gap, and a drain's deletes and visibility extensions failed for good, so the
 * messages it held waited out their visibility timeout although Storage was back seconds later.
 *
 * Requests in flight when the emulator dies need nothing from here: the kernel closes a killed
 * process's sockets, so they fail at once (reset) and their retry comes here. The wait is
 * bounded; after it the attempt is sent as usual and fails or succeeds on its own. An endpoint
 * nobody marks (real Azure, a test's Azurite) costs a map lookup.
 */
import type { PipelinePolicy, PipelineRequest } from '@azure/core-rest-pipeline';

const ENDPOINT_OUTAGE_POLICY = 'pushdrainEndpointOutage';

/** Longest the attempts to a marked endpoint wait, from when it went down: a restart that takes longer is failing. */
const OUTAGE_WAIT_MS = 20_000;

export class EndpointOutages {
  /** Down endpoints (`host:port`): since when, and what their waiters are woken with when they are back. */
  private readonly down = new Map<string, { since: number; back: Promise<void>; wake: () => void }>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Marks `host:port` endpoints down (true) or back (false); back wakes every waiting attempt. */
  set(endpoints: readonly string[], isDown: boolean): void {
    for (const endpoint of endpoints) {
      const outage = this.down.get(endpoint);
      if (isDown && !outage) {
        let wake = (): void => undefined;
        const back = new Promise<void>((resolve) => (wake = resolve));
        this.down.set(endpoint, { since: this.now(), back, wake });
      } else if (!isDown && outage) {
        this.down.delete(endpoint);
        outage.wake();
      }
    }
  }

  isDown(endpoint: string): boolean {
    return this.down.has(endpoint);
  }

  /**
   * Resolves when `endpoint` is back, `maxMs` after it went down, or when `signal` aborts,
   * whichever is first. The bound counts from the outage's start, so the SDK's retries of one
   * request add at most `maxMs` in all, not `maxMs` each.
   */
  async waitUntilBack(endpoint: string, maxMs: number, signal?: PipelineRequest['abortSignal']): Promise<void> {
    const outage = this.down.get(endpoint);
    const leftMs = outage ? outage.since + maxMs - this.now() : 0;
    if (!outage || leftMs <= 0 || signal?.aborted) return;
    let timer: NodeJS.Timeout | undefined;
    let onAbort = (): void => undefined;
    await Promise.race([
      outage.back,
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, leftMs);
        onAbort = resolve;
        signal?.addEventListener('abort', onAbort);
      }),
    ]);
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  }
}

/** The process's outages: the local stack marks its embedded Azurite's endpoints here. */
export const endpointOutages = new EndpointOutages();

/** `host:port` of a request URL, as EndpointOutages keys it. */
export function endpointOf(url: string): string {
  const u = new URL(url);
  return `${u.hostname}:${u.port || (u.protocol === 'https:' ? '443' : '80')}`;
}

/** Below the retry policy: each attempt to a marked endpoint waits for it before it is sent. */
export function endpointOutagePolicy(
  outages: EndpointOutages = endpointOutages,
  maxWaitMs: number = OUTAGE_WAIT_MS,
): PipelinePolicy {
  return {
    name: ENDPOINT_OUTAGE_POLICY,
    sendRequest: async (request, next) => {
      const endpoint = endpointOf(request.url);
      if (outages.isDown(endpoint)) await outages.waitUntilBack(endpoint, maxWaitMs, request.abortSignal);
      return next(request);
    },
  };
}
