// Least-privilege data-plane roles, each scoped to the one resource it is for (never the resource
// group or subscription). The app identity gets what the host and the app need; the optional
// developer principal gets what the local host needs to run against this environment.

@description('Principal id of the app\'s user-assigned identity.')
param identityPrincipalId string

@description('Storage account with the work, results and host state.')
param storageAccountName string

@description('Service Bus namespace.')
param serviceBusNamespaceName string

@description('Application Insights component (Entra-authenticated ingestion).')
param applicationInsightsName string

@description('Developer principal for local runs against the cloud; empty grants nothing.')
param principalId string = ''

@allowed([
  'User'
  'ServicePrincipal'
])
@description('Kind of principal behind principalId.')
param principalType string = 'User'

// Built-in role definition ids: https://learn.microsoft.com/azure/role-based-access-control/built-in-roles
var roles = {
  storageBlobDataOwner: 'b7e6dc6d-f1e8-4753-8033-0f276bb0955b' // Storage Blob Data Owner
  storageBlobDataContributor: 'ba92f5b4-2d11-453d-a403-e96b0029c9fe' // Storage Blob Data Contributor
  storageQueueDataContributor: '974c5e8b-45b9-4653-ba55-5f855dd0fb88' // Storage Queue Data Contributor
  serviceBusDataSender: '69a216fc-b8fb-44d8-bc22-1f3c2cd27a39' // Azure Service Bus Data Sender
  serviceBusDataReceiver: '4f6d3b9b-027b-4f4c-9142-0e5a2a2247e0' // Azure Service Bus Data Receiver
  monitoringMetricsPublisher: '3913510d-42f4-4e42-8a64-420c390055eb' // Monitoring Metrics Publisher
}

var grantDeveloper = !empty(principalId)

resource storage 'Microsoft.Storage/storageAccounts@2025-06-01' existing = {
  name: storageAccountName
}

resource serviceBus 'Microsoft.ServiceBus/namespaces@2026-01-01' existing = {
  name: serviceBusNamespaceName
}

resource applicationInsights 'Microsoft.Insights/components@2020-02-02' existing = {
  name: applicationInsightsName
}

// --- App identity ----------------------------------------------------------------------------

// Owner, not Contributor: the Functions host needs it for AzureWebJobsStorage (blob leases for
// the timer singleton and host keys) and the Flex deployment container; the drain-slot leases too.
resource appBlobOwner 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(storage.id, identityPrincipalId, roles.storageBlobDataOwner)
  scope: storage
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.storageBlobDataOwner)
    principalId: identityPrincipalId
    principalType: 'ServicePrincipal'
  }
}

resource appQueueContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(storage.id, identityPrincipalId, roles.storageQueueDataContributor)
  scope: storage
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.storageQueueDataContributor)
    principalId: identityPrincipalId
    principalType: 'ServicePrincipal'
  }
}

resource appServiceBusSender 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(serviceBus.id, identityPrincipalId, roles.serviceBusDataSender)
  scope: serviceBus
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.serviceBusDataSender)
    principalId: identityPrincipalId
    principalType: 'ServicePrincipal'
  }
}

resource appServiceBusReceiver 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(serviceBus.id, identityPrincipalId, roles.serviceBusDataReceiver)
  scope: serviceBus
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.serviceBusDataReceiver)
    principalId: identityPrincipalId
    principalType: 'ServicePrincipal'
  }
}

// Application Insights has local auth off: ingestion needs this role on the component.
resource appMetricsPublisher 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(applicationInsights.id, identityPrincipalId, roles.monitoringMetricsPublisher)
  scope: applicationInsights
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.monitoringMetricsPublisher)
    principalId: identityPrincipalId
    principalType: 'ServicePrincipal'
  }
}

// --- Developer principal (optional) ------------------------------------------------------------

// Contributor is enough for the local host: it takes blob leases but never hosts AzureWebJobsStorage.
resource devBlobContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (grantDeveloper) {
  name: guid(storage.id, principalId, roles.storageBlobDataContributor)
  scope: storage
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.storageBlobDataContributor)
    principalId: principalId
    principalType: principalType
  }
}

resource devQueueContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (grantDeveloper) {
  name: guid(storage.id, principalId, roles.storageQueueDataContributor)
  scope: storage
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.storageQueueDataContributor)
    principalId: principalId
    principalType: principalType
  }
}

resource devServiceBusSender 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (grantDeveloper) {
  name: guid(serviceBus.id, principalId, roles.serviceBusDataSender)
  scope: serviceBus
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.serviceBusDataSender)
    principalId: principalId
    principalType: principalType
  }
}

resource devServiceBusReceiver 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (grantDeveloper) {
  name: guid(serviceBus.id, principalId, roles.serviceBusDataReceiver)
  scope: serviceBus
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.serviceBusDataReceiver)
    principalId: principalId
    principalType: principalType
  }
}
