// One topic with its subscriptions and their filters, straight from infra/servicebus-entities.json.
// A subscription's filter is either null (it receives everything) or a map of application
// properties that must all match (a SQL-free CorrelationFilter, e.g. { role: 'input' }).

@description('Existing namespace the topic goes into.')
param namespaceName string

@description('One entry of topics[] in infra/servicebus-entities.json.')
param topic object

resource namespace 'Microsoft.ServiceBus/namespaces@2026-01-01' existing = {
  name: namespaceName
}

resource topicResource 'Microsoft.ServiceBus/namespaces/topics@2026-01-01' = {
  parent: namespace
  name: topic.name
  properties: {
    defaultMessageTimeToLive: topic.?defaultMessageTimeToLive ?? 'P14D'
    enableBatchedOperations: true
  }
}

resource subscriptions 'Microsoft.ServiceBus/namespaces/topics/subscriptions@2026-01-01' = [
  for sub in topic.subscriptions: {
    parent: topicResource
    name: sub.name
    properties: {
      lockDuration: sub.lockDuration
      maxDeliveryCount: sub.maxDeliveryCount
      deadLetteringOnMessageExpiration: sub.deadLetteringOnMessageExpiration
      deadLetteringOnFilterEvaluationExceptions: true
      defaultMessageTimeToLive: sub.?defaultMessageTimeToLive ?? topic.?defaultMessageTimeToLive ?? 'P14D'
      enableBatchedOperations: true
    }
  }
]

// Every new subscription gets a rule named $Default that accepts everything. The filter must
// replace that rule (same name): a second rule would be OR-ed with it and let every event through.
resource filters 'Microsoft.ServiceBus/namespaces/topics/subscriptions/rules@2026-01-01' = [
  for (sub, i) in topic.subscriptions: if (!empty(sub.?filter ?? {})) {
    parent: subscriptions[i]
    name: '$Default'
    properties: {
      filterType: 'CorrelationFilter'
      correlationFilter: {
        properties: sub.filter
      }
    }
  }
]

output name string = topicResource.name
