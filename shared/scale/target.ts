/**
 * The scaling agent's seam to the management API. The adapter behind it
 * (shared/scale/arm-target.ts) is the only code that touches @azure/arm-appservice.
 *
 * Errors: a 429 is a TransientError carrying the Retry-After; a 403 is an AccessDeniedError.
 */

/** What the agent wants the platform to keep for the drain function. */
export interface ScaleDecision {
  /** Instances kept ready (Flex: always-ready for the drain function; Premium: minimum elastic instances). */
  floor: number;
  /** Scale-out ceiling (Flex: maximumInstanceCount; Premium: functionAppScaleLimit). */
  ceiling: number;
}

/** A management request as it goes on the wire, for the dry-run log and the tests. */
export interface ArmRequest {
  method: 'GET' | 'PATCH';
  url: string;
  body?: unknown;
  /** What the request carries that only a read at apply time can know. */
  note?: string;
}

export interface ScaleTarget {
  /** The write this decision needs, as it would be sent (the dry-run logs it; nothing is called). */
  describe(decision: ScaleDecision): ArmRequest;
  /** Reads the site and writes only what differs: 'unchanged' means no write was needed. */
  apply(decision: ScaleDecision): Promise<'written' | 'unchanged'>;
}
