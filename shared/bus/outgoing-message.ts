/**
 * A message as the app sends it, as plain data (no SDK types): what every builder in shared/bus/
 * returns and every publisher and channel takes.
 */

/** Application property values Service Bus filters and the Functions host carry unchanged. */
export type PropertyValue = string | number | boolean;

/** The subset of the SDK's ServiceBusMessage the app uses. */
export interface OutgoingMessage {
  body: unknown;
  contentType: string;
  subject: string;
  messageId?: string;
  /** Explicit, so that a backlog copy can carry it (the entities' defaults are the same values). */
  timeToLive: number;
  applicationProperties: Record<string, PropertyValue>;
}

/** The application property that carries a message's W3C trace context (Service Bus SDK, Functions host). */
export const DIAGNOSTIC_ID = 'Diagnostic-Id';

/** "3 WorkDetected message(s)": what a failure names. */
export function describeMessages(messages: readonly OutgoingMessage[]): string {
  return `${messages.length} ${[...new Set(messages.map((m) => m.subject))].join('/')} message(s)`;
}
