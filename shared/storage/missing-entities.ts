/**
 * The queues and containers Storage said do not exist. infra/ provisions every one the app uses and
 * the app never creates one, so a 404 with `x-ms-error-code` QueueNotFound or ContainerNotFound is
 * a broken deployment, not a missing message or blob: a pipeline policy on every Storage client turns
 * it into a NotProvisionedError naming the entity (so no adapter mistakes it for "no such blob"), and
 * health reports the entity as degraded until a request to it succeeds.
 */
import type { PipelinePolicy, PipelineRequest } from '@azure/core-rest-pipeline';

import { NotProvisionedError } from '../errors';

/** Storage's error codes for a missing entity (Queue and Blob service error codes). */
const MISSING: Readonly<Record<string, NotProvisionedError['kind']>> = {
  QueueNotFound: 'queue',
  ContainerNotFound: 'container',
};

export class MissingEntities {
  /** `queue work-0`, `container leases`: what health shows. */
  private readonly seen = new Set<string>();

  /** The entities found missing and not seen since, sorted; empty when all is well. */
  snapshot(): string[] {
    return [...this.seen].sort();
  }

  /**
   * The policy for the clients of `accountName`, placed above the retry policy (a 404 is not
   * retried, so it sees the operation's one answer) and below deserialization (which would turn
   * the 404 into a RestError first).
   */
  policy(accountName: string): PipelinePolicy {
    return {
      name: 'pushdrainMissingEntities',
      sendRequest: async (request, next) => {
        const response = await next(request);
        const kind = response.status === 404 ? MISSING[response.headers.get('x-ms-error-code') ?? ''] : undefined;
        if (kind !== undefined) {
          const entity = entityOf(request, accountName);
          this.seen.add(`${kind} ${entity}`);
          throw new NotProvisionedError(kind, entity);
        }
        if (this.seen.size > 0 && response.status < 400) {
          const entity = entityOf(request, accountName);
          this.seen.delete(`queue ${entity}`);
          this.seen.delete(`container ${entity}`);
        }
        return response;
      },
    };
  }
}

/**
 * The queue or container a request addresses: the first path segment on Azure's
 * `{account}.queue.core.windows.net/{entity}`, the second on an emulator's `host:port/{account}/{entity}`.
 */
function entityOf(request: PipelineRequest, accountName: string): string {
  const url = new URL(request.url);
  const segments = url.pathname.split('/').filter((s) => s !== '');
  const pathStyle = !url.hostname.startsWith(`${accountName}.`) && segments[0] === accountName;
  return decodeURIComponent(segments[pathStyle ? 1 : 0] ?? url.pathname);
}
