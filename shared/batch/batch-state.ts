/**
 * A batch's states and the one table of the changes allowed between them. A batch is born
 * `ingesting` (ingest's claim); every later manifest write goes through `checkStateChange`
 * (ManifestStore.replace and .update), so a change that is not in the table is an error that
 * writes nothing.
 */
import { PermanentError } from '../errors';

/** `ingesting` and `abandoned` are internal: a batch in them was never answered 202. */
export type BatchState = 'ingesting' | 'accepted' | 'completed' | 'failed' | 'abandoned';

/**
 * from → to → who makes that change. Staying in a state is always allowed (a heartbeat, a
 * chunk outcome, a delivery's progress); anything else is listed here or refused.
 */
export const STATE_CHANGES: Readonly<Record<BatchState, Readonly<Partial<Record<BatchState, string>>>>> = {
  ingesting: {
    accepted: 'ingest, once every chunk is enqueued (the 202)',
    abandoned: 'ingest, when the request failed before its 202',
  },
  abandoned: { ingesting: 'a retry with the same Idempotency-Key takes the claim over' },
  accepted: {
    completed: 'finalize, when every chunk is done',
    failed: 'finalize, when every chunk is settled and one failed',
  },
  failed: { accepted: 'redrive, which reopens a failed chunk' },
  completed: {},
};

/**
 * Terminal: the batch has its answer (completed or failed), its event is in the outbox, and no
 * chunk outcome changes it any more. Terminal is not final: an operator's redrive may reopen a
 * failed batch (the one change out of a terminal state in STATE_CHANGES), after which it
 * settles and finalizes again.
 */
function isTerminalState(state: BatchState): boolean {
  return state === 'completed' || state === 'failed';
}

export function isTerminal(m: { state: BatchState }): boolean {
  return isTerminalState(m.state);
}

export function isAllowedChange(from: BatchState, to: BatchState): boolean {
  return from === to || STATE_CHANGES[from][to] !== undefined;
}

/** Throws (a PermanentError: retrying cannot make it allowed) unless from → to is in the table. */
export function checkStateChange(batchId: string, from: BatchState, to: BatchState): void {
  if (isAllowedChange(from, to)) return;
  const allowed = Object.keys(STATE_CHANGES[from]);
  throw new PermanentError(
    `batch ${batchId}: ${from} → ${to} is not an allowed state change (from ${from}: ${
      allowed.length > 0 ? allowed.join(', ') : 'none'
    })`,
  );
}
