/** The broker's options for the repo's entities plus what a consumer of `batch-events` adds: a subscription of its own. */
import { BATCH_EVENTS_TOPIC } from '../../shared/names';
import type { BrokerOptions } from '../../tools/devstack/servicebus/broker';
import { loadEntitiesConfig } from '../../tools/devstack/servicebus/config';

export function withAuditSubscription(): BrokerOptions {
  const full = loadEntitiesConfig();
  return {
    entities: {
      ...full,
      topics: (full.topics ?? []).map((t) =>
        t.name === BATCH_EVENTS_TOPIC
          ? {
              ...t,
              subscriptions: [{ name: 'audit', filter: null, lockDuration: 'PT30S', maxDeliveryCount: 10 }],
            }
          : t,
      ),
    },
  };
}
