/**
 * GET /api/health: this process's view, from memory. Anonymous: states and counts only.
 */
import type { HttpResponseInit } from '@azure/functions';

import type { PushdrainApp } from '../shared/app';
import { json } from './http-errors';
import { openRoute } from './http-route';
import { pushdrainApp } from './pushdrain-app';

/**
 * Makes no Storage request: a health probe must not cost transactions or wake anything. Always
 * 200, so probes never recycle a healthy worker over a namespace or scaling problem: `status` is
 * degraded while a Service Bus entity is failed over, the scaling agent is disabled (a 403) or a
 * dead letter was counted, and red after a permanent Service Bus failure (fix the configuration).
 * Dead letters are counts from memory, recounted in the background at most every few minutes.
 * The route is anonymous: states and counts only, no error text (it can name hosts or
 * identities) and no message; the errors are in the log, the dead letters in the status report.
 */
export function health(app: PushdrainApp): HttpResponseInit {
  const {
    serviceBus,
    scaleAgent: { message: _, ...scaleAgent },
    ...rest
  } = app.healthProbe();
  const failover = serviceBus && {
    status: serviceBus.status,
    entities: Object.fromEntries(
      Object.entries(serviceBus.entities).map(([name, { lastError: _e, ...state }]) => [name, state]),
    ),
    backlogOutOfRotation: serviceBus.backlogOutOfRotation.map(({ lastError: _e, ...queue }) => queue),
  };
  return json(200, {
    ...rest,
    scaleAgent,
    storageTransactions: app.storageTransactions(),
    ...(failover ? { serviceBus: failover } : {}),
  });
}

openRoute('health', { route: 'health', method: 'GET', handler: () => health(pushdrainApp()) });
