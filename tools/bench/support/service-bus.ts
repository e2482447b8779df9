/** Which of the broker's counters are Service Bus operations in the billing sense. */

/** Link credit, heartbeats, attaches and CBS token exchanges are protocol overhead, not operations. */
const SERVICE_BUS_OPERATIONS = ['send', 'deliver', 'complete', 'abandon', 'deadletter', 'defer', 'management'] as const;

export function serviceBusOperations(stats: Record<string, number>): number {
  return SERVICE_BUS_OPERATIONS.reduce((a, k) => a + (stats[k] ?? 0), 0);
}
