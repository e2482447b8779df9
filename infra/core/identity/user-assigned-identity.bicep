// The one identity the function app runs as. Every data-plane grant in app/rbac.bicep targets it.

@description('Identity name.')
param name string

@description('Region.')
param location string

@description('Tags.')
param tags object

resource identity 'Microsoft.ManagedIdentity/userAssignedIdentities@2024-11-30' = {
  name: name
  location: location
  tags: tags
}

output id string = identity.id
output name string = identity.name
output clientId string = identity.properties.clientId
output principalId string = identity.properties.principalId
