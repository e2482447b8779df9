/** How many dequeue tasks a drain starts for a queue of a given depth. */
export type TaskCountRule = (depth: number) => number;

/** One task per `messagesPerTask` queued messages, at least one, at most `maxTasks`. */
export function perMessagesRule(messagesPerTask: number, maxTasks: number): TaskCountRule {
  return (depth) => Math.max(1, Math.min(maxTasks, Math.ceil(Math.max(0, depth) / messagesPerTask)));
}
