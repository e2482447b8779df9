// Send availability: a secondary Standard namespace whose only entities are the backlog queues
// backlog-0…backlog-{N-1} (their properties from infra/servicebus-backlog-queue.json, which the
// development broker serves too), and the roles on each queue. When the primary cannot take
// sends, the publisher sends to a backlog queue; the syphon functions receive from them and
// restore each message to the primary, with the Sender role the app already holds there.
// Identity only: the namespace has SAS auth off, like the primary.

@description('Namespace name (6-50 chars, globally unique).')
param name string

@description('Region; another region than the primary\'s survives a regional outage.')
param location string

@description('Tags.')
param tags object

@minValue(1)
@maxValue(10)
@description('Backlog queues backlog-0…backlog-{N-1}; the app\'s PUSHDRAIN_BACKLOG_QUEUE_COUNT must be the same.')
param backlogQueueCount int

@description('Principal id of the app\'s user-assigned identity: Sender (failover) and Receiver (syphon) on each backlog queue.')
param identityPrincipalId string

@description('Developer principal for local runs against the cloud; empty grants nothing.')
param principalId string = ''

@allowed([
  'User'
  'ServicePrincipal'
])
@description('Kind of principal behind principalId.')
param principalType string = 'User'

var backlogQueue = loadJsonContent('../servicebus-backlog-queue.json')
var queues = map(range(0, backlogQueueCount), i => {
  name: 'backlog-${i}'
  lockDuration: backlogQueue.lockDuration
  maxDeliveryCount: backlogQueue.maxDeliveryCount
  deadLetteringOnMessageExpiration: backlogQueue.deadLetteringOnMessageExpiration
  defaultMessageTimeToLive: backlogQueue.defaultMessageTimeToLive
})

module namespace '../core/messaging/servicebus-namespace.bicep' = {
  name: take('${name}-namespace', 64)
  params: {
    name: name
    location: location
    tags: tags
    topics: []
    queues: queues
  }
}

// One deployment per queue, so that every grant covers that queue and nothing else.
module queueRoles 'backlog-queue-roles.bicep' = [
  for queue in queues: {
    name: take('${name}-roles-${queue.name}', 64)
    params: {
      namespaceName: namespace.outputs.name
      queueName: queue.name
      identityPrincipalId: identityPrincipalId
      principalId: principalId
      principalType: principalType
    }
  }
]

output name string = namespace.outputs.name
output fullyQualifiedNamespace string = namespace.outputs.fullyQualifiedNamespace
