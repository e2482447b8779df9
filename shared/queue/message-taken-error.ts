/**
 * A delete or visibility update that failed on its pop receipt (400 PopReceiptMismatch) or found
 * the message gone (404): its visibility timeout ran out while we worked on it, and another
 * drain received it (and may already have deleted it). Not a failure of ours: the other delivery
 * owns the message now, and the work was done twice. The drain counts it as a duplicate.
 */
export class MessageTakenError extends Error {
  override readonly name = 'MessageTakenError';
  constructor(
    readonly messageId: string,
    options?: { cause?: unknown },
  ) {
    super(`message ${messageId} was taken by another delivery (its visibility timeout had passed)`, options);
  }
}
