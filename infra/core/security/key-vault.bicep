// A Key Vault for the app's one secret, PUSHDRAIN_WEBHOOK_SECRET: RBAC-authorized (no access
// policies), soft delete and purge protection on, and only the app identity may read secrets.
// The app setting is a Key Vault reference, so the secret never sits in the site's configuration.

@description('Key Vault name (3-24 chars).')
param name string

param location string

param tags object

@description('Name of the secret (the app setting\'s Key Vault reference names it).')
param secretName string

@secure()
@description('The Standard Webhooks secret (whsec_…) that signs batch events.')
param webhookSecret string

@description('Principal id of the app identity (reads the secret through the Key Vault reference).')
param identityPrincipalId string

var keyVaultSecretsUser = '4633458b-17de-408a-b874-0445c86b69e6' // Key Vault Secrets User

resource vault 'Microsoft.KeyVault/vaults@2026-02-01' = {
  name: name
  location: location
  tags: tags
  properties: {
    tenantId: tenant().tenantId
    sku: {
      family: 'A'
      name: 'standard'
    }
    enableRbacAuthorization: true
    enableSoftDelete: true
    softDeleteRetentionInDays: 90
    enablePurgeProtection: true
    publicNetworkAccess: 'Enabled'
  }
}

resource secret 'Microsoft.KeyVault/vaults/secrets@2026-02-01' = {
  parent: vault
  name: secretName
  properties: {
    value: webhookSecret
    contentType: 'Standard Webhooks secret'
  }
}

resource appReadsSecret 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(secret.id, identityPrincipalId, keyVaultSecretsUser)
  scope: secret
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', keyVaultSecretsUser)
    principalId: identityPrincipalId
    principalType: 'ServicePrincipal'
  }
}
