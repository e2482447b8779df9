/**
 * How often a queue message was handed back unread (NewerFormatError): its `hb` field, which
 * every version of every pointer format keeps for this (docs/DEPLOY.md, "Changing a format").
 *
 * Azure Storage counts a delivery on every receive, a handback's included, and nothing resets
 * the count. So a handback also writes `hb` one higher into the message (the same Update Message
 * request that sets its visibility), and the poison rule counts only the deliveries that were
 * not handbacks: `dequeueCount − hb`. A message handed back eight times during a deploy still
 * has its full number of tries on the newer instance that reads it.
 */

/** Handbacks `text` records; 0 when it records none or is not a JSON object. */
export function handbacksOf(text: string): number {
  try {
    const hb = (JSON.parse(text) as { hb?: unknown } | null)?.hb;
    return typeof hb === 'number' && Number.isSafeInteger(hb) && hb > 0 ? hb : 0;
  } catch {
    return 0;
  }
}

/** `text` with one more handback recorded; the other fields as they were, in their order. */
export function withHandback(text: string): string {
  const o = JSON.parse(text) as Record<string, unknown>;
  return JSON.stringify({ ...o, hb: handbacksOf(text) + 1 });
}

/** Deliveries that count toward poison: the receives that were not handbacks. */
export function countedDeliveries(message: { dequeueCount: number; text: string }): number {
  return message.dequeueCount - handbacksOf(message.text);
}
