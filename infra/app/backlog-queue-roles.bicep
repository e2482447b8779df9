// The roles on one backlog queue of the secondary namespace, scoped to that queue: the app
// identity sends to it (failover) and receives from it (the syphon); the optional developer
// principal gets the same for local runs against the cloud.

@description('The secondary namespace.')
param namespaceName string

@description('One backlog queue in it.')
param queueName string

@description('Principal id of the app\'s user-assigned identity.')
param identityPrincipalId string

@description('Developer principal; empty grants nothing.')
param principalId string = ''

@allowed([
  'User'
  'ServicePrincipal'
])
@description('Kind of principal behind principalId.')
param principalType string = 'User'

var roles = {
  serviceBusDataSender: '69a216fc-b8fb-44d8-bc22-1f3c2cd27a39' // Azure Service Bus Data Sender
  serviceBusDataReceiver: '4f6d3b9b-027b-4f4c-9142-0e5a2a2247e0' // Azure Service Bus Data Receiver
}

var grantDeveloper = !empty(principalId)

resource namespace 'Microsoft.ServiceBus/namespaces@2026-01-01' existing = {
  name: namespaceName
}

resource queue 'Microsoft.ServiceBus/namespaces/queues@2026-01-01' existing = {
  parent: namespace
  name: queueName
}

resource appSender 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(queue.id, identityPrincipalId, roles.serviceBusDataSender)
  scope: queue
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.serviceBusDataSender)
    principalId: identityPrincipalId
    principalType: 'ServicePrincipal'
  }
}

resource appReceiver 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(queue.id, identityPrincipalId, roles.serviceBusDataReceiver)
  scope: queue
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.serviceBusDataReceiver)
    principalId: identityPrincipalId
    principalType: 'ServicePrincipal'
  }
}

resource devSender 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (grantDeveloper) {
  name: guid(queue.id, principalId, roles.serviceBusDataSender)
  scope: queue
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.serviceBusDataSender)
    principalId: principalId
    principalType: principalType
  }
}

resource devReceiver 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (grantDeveloper) {
  name: guid(queue.id, principalId, roles.serviceBusDataReceiver)
  scope: queue
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.serviceBusDataReceiver)
    principalId: principalId
    principalType: principalType
  }
}
