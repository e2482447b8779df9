/**
 * The functions the architecture fixes (names, triggers, routes, auth levels, connections): clients
 * and infra rely on them. One table, held against the registrations of the repo (deploy-readiness)
 * and of each deployable package (packaging).
 */
import { WATCHDOG_QUEUE } from '../../shared/names';

export const HTTP_CONTRACT = [
  { name: 'postBatch', route: 'batches', methods: ['POST'], authLevel: 'function' },
  // The caller's batches, newest first (a submitter's own only).
  { name: 'listBatches', route: 'batches', methods: ['GET'], authLevel: 'function' },
  { name: 'getBatch', route: 'batches/{batchId}', methods: ['GET'], authLevel: 'function' },
  { name: 'getBatchReport', route: 'batches/{batchId}/report', methods: ['GET'], authLevel: 'function' },
  { name: 'getBatchTimeline', route: 'batches/{batchId}/timeline', methods: ['GET'], authLevel: 'function' },
  { name: 'health', route: 'health', methods: ['GET'], authLevel: 'anonymous' },
  // Operators only: the master (admin) key, never a function key.
  { name: 'opsRedrive', route: 'ops/redrive', methods: ['POST'], authLevel: 'admin' },
  // Sends a test event to the operator's webhooks: the admin key too (it makes the app call out).
  { name: 'opsWebhookTest', route: 'ops/webhooks/test', methods: ['POST'], authLevel: 'admin' },
  // Read-only operator view: a function key.
  { name: 'opsStatus', route: 'ops/status', methods: ['GET'], authLevel: 'function' },
  // The status page shell: static, no data and no key in it; what it shows comes from ops/status.
  { name: 'dashboard', route: 'dashboard', methods: ['GET'], authLevel: 'anonymous' },
  // The OpenAPI document (static/openapi.json): anonymous, no Storage request, as the page shell.
  { name: 'openApiDocument', route: 'openapi.json', methods: ['GET'], authLevel: 'anonymous' },
];
export const TIMER_CONTRACT = [{ name: 'ingestSweep', schedule: '%PUSHDRAIN_SWEEP_SCHEDULE%' }];
export const TOPIC_CONTRACT = [
  { name: 'drain', topic: 'work-detected', subscription: 'drain', role: 'input', connection: 'ServiceBusConnection' },
  {
    name: 'aggregate',
    topic: 'work-detected',
    subscription: 'aggregate',
    role: 'output',
    connection: 'ServiceBusConnection',
  },
  // The scaling agent: every event (and its own scheduled checks) is a load signal.
  {
    name: 'scaleAgent',
    topic: 'work-detected',
    subscription: 'scale',
    role: undefined,
    connection: 'ServiceBusConnection',
  },
];
export const QUEUE_CONTRACT = [{ name: 'watchdog', queue: WATCHDOG_QUEUE, connection: 'ServiceBusConnection' }];

export interface CapturedFunction {
  name: string;
  trigger: { type: string; [key: string]: unknown };
}

/** Every way the registrations differ from the contract, one line each; empty when they agree. */
export function contractProblems(functions: readonly CapturedFunction[]): string[] {
  const problems: string[] = [];
  const byName = new Map(functions.map((f) => [f.name, f.trigger]));
  const expect = (name: string, wanted: Record<string, unknown>): void => {
    const t = byName.get(name);
    if (!t) {
      problems.push(`${name} is not registered`);
      return;
    }
    for (const [key, value] of Object.entries(wanted)) {
      const actual =
        key === 'methods' && Array.isArray(t.methods) ? (t.methods as string[]).map((m) => m.toUpperCase()) : t[key];
      if (JSON.stringify(actual) !== JSON.stringify(value))
        problems.push(`${name}.${key} is ${JSON.stringify(actual)}, the contract says ${JSON.stringify(value)}`);
    }
  };
  for (const c of HTTP_CONTRACT)
    expect(c.name, { type: 'httpTrigger', route: c.route, methods: c.methods, authLevel: c.authLevel });
  for (const c of TIMER_CONTRACT) expect(c.name, { type: 'timerTrigger', schedule: c.schedule });
  for (const c of TOPIC_CONTRACT)
    expect(c.name, {
      type: 'serviceBusTrigger',
      topicName: c.topic,
      subscriptionName: c.subscription,
      connection: c.connection,
    });
  for (const c of QUEUE_CONTRACT)
    expect(c.name, { type: 'serviceBusTrigger', queueName: c.queue, connection: c.connection });
  const known = new Set([...HTTP_CONTRACT, ...TIMER_CONTRACT, ...TOPIC_CONTRACT, ...QUEUE_CONTRACT].map((c) => c.name));
  for (const f of functions) if (!known.has(f.name)) problems.push(`${f.name} is registered but not in the contract`);
  return problems;
}
