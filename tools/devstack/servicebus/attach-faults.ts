/**
 * Attach refusals for tests: an entity that answers every sender or receiver link with the error
 * Service Bus gives a token without the claim, a deleted entity, or a disabled one. The SDK maps
 * them to UnauthorizedAccess, MessagingEntityNotFound and MessagingEntityDisabled.
 */
import type { AmqpError } from 'rhea';

import { isWithin, normalizePath } from './entities';

export type AttachRefusal = 'unauthorized' | 'not-found' | 'disabled';

const REFUSALS: Readonly<Record<AttachRefusal, (path: string) => AmqpError>> = {
  unauthorized: (path) => ({
    condition: 'amqp:unauthorized-access',
    description: `Unauthorized access. 'Send' claim(s) are required to perform this operation. Resource: '${path}'. (injected by the development broker)`,
  }),
  // The SDK recognises "could not be found" in the description as MessagingEntityNotFound.
  'not-found': (path) => ({
    condition: 'amqp:not-found',
    description: `The messaging entity '${path}' could not be found. (injected by the development broker)`,
  }),
  disabled: (path) => ({
    condition: 'com.microsoft:entity-disabled',
    description: `Messaging entity '${path}' is currently disabled. (injected by the development broker)`,
  }),
};

export class AttachFaults {
  private readonly refused = new Map<string, AttachRefusal>();

  /** Refuses links at or below `entityPath` with `kind`; undefined lifts the refusal. */
  set(entityPath: string, kind: AttachRefusal | undefined): void {
    if (kind !== undefined && !(kind in REFUSALS)) throw new RangeError(`refuseAttach: unknown kind ${String(kind)}`);
    if (kind === undefined) this.refused.delete(normalizePath(entityPath));
    else this.refused.set(normalizePath(entityPath), kind);
  }

  /** The error to close an entity link on `address` with, or undefined to let it attach. */
  errorFor(address: string): AmqpError | undefined {
    for (const [scope, kind] of this.refused) if (isWithin(address, scope)) return REFUSALS[kind](address);
    return undefined;
  }

  clear(): void {
    this.refused.clear();
  }
}
