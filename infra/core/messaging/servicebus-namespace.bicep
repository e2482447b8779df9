// A Standard Service Bus namespace (topics need Standard) with SAS auth off, plus the topics and
// queues it is given. Topics and subscriptions arrive in the shape of infra/servicebus-entities.json.

@description('Namespace name (6-50 chars, globally unique).')
param name string

@description('Region.')
param location string

@description('Tags.')
param tags object

@description('Topics as in infra/servicebus-entities.json: { name, defaultMessageTimeToLive?, subscriptions: [...] }.')
param topics array = []

@description('Queues: { name, lockDuration?, maxDeliveryCount?, deadLetteringOnMessageExpiration?, defaultMessageTimeToLive? }.')
param queues array = []

resource namespace 'Microsoft.ServiceBus/namespaces@2026-01-01' = {
  name: name
  location: location
  tags: tags
  sku: {
    name: 'Standard'
    tier: 'Standard'
  }
  properties: {
    disableLocalAuth: true
    minimumTlsVersion: '1.2'
    publicNetworkAccess: 'Enabled'
  }
}

resource queueResources 'Microsoft.ServiceBus/namespaces/queues@2026-01-01' = [
  for queue in queues: {
    parent: namespace
    name: queue.name
    properties: {
      lockDuration: queue.?lockDuration ?? 'PT1M'
      maxDeliveryCount: queue.?maxDeliveryCount ?? 10
      deadLetteringOnMessageExpiration: queue.?deadLetteringOnMessageExpiration ?? true
      defaultMessageTimeToLive: queue.?defaultMessageTimeToLive ?? 'P14D'
      enableBatchedOperations: true
    }
  }
]

// One deployment per topic: subscriptions and rules loop inside it, under their own parents.
module topicResources 'servicebus-topic.bicep' = [
  for topic in topics: {
    name: take('${name}-topic-${topic.name}', 64)
    params: {
      namespaceName: namespace.name
      topic: topic
    }
  }
]

output id string = namespace.id
output name string = namespace.name
// serviceBusEndpoint is https://<name>.servicebus.windows.net:443/ (the cloud's own suffix).
output fullyQualifiedNamespace string = split(split(namespace.properties.serviceBusEndpoint, '//')[1], ':')[0]
