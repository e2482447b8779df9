/** How many dequeue tasks (or drains, across instances) a queue of a given depth deserves. */
export type TaskCountRule = (depth: number) => number;

/** One per `perMessages` queued messages, at least one, at most `max`. */
export function perMessagesRule(perMessages: number, max: number): TaskCountRule {
  return (depth) => Math.max(1, Math.min(max, Math.ceil(Math.max(0, depth) / perMessages)));
}
