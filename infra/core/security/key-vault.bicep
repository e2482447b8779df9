// A Key Vault for the app's secrets, PUSHDRAIN_WEBHOOK_SECRET and, when given, the callbacks'
// PUSHDRAIN_CALLBACK_SIGNING_KEY: RBAC-authorized (no access policies), soft delete and purge
// protection on, and only the app identity may read them. The app settings are Key Vault
// references, so no secret sits in the site's configuration.

@description('Key Vault name (3-24 chars).')
param name string

param location string

param tags object

@description('Name of the secret (the app setting\'s Key Vault reference names it).')
param secretName string

@secure()
@description('The Standard Webhooks secret (whsec_…) that signs batch events.')
param webhookSecret string

@description('Whether callbacks are on: then the vault also holds their signing key.')
param storeCallbackKey bool = false

@secure()
@description('The ed25519 seed (whsk_…) that signs callbacks.')
param callbackSigningKey string = ''

@description('Name of the callback signing key\'s secret.')
param callbackKeySecretName string = 'pushdrain-callback-signing-key'

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

resource callbackKey 'Microsoft.KeyVault/vaults/secrets@2026-02-01' = if (storeCallbackKey) {
  parent: vault
  name: callbackKeySecretName
  properties: {
    value: callbackSigningKey
    contentType: 'Standard Webhooks ed25519 signing key'
  }
}

resource appReadsCallbackKey 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (storeCallbackKey) {
  name: guid(vault.id, callbackKeySecretName, identityPrincipalId, keyVaultSecretsUser)
  scope: callbackKey
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', keyVaultSecretsUser)
    principalId: identityPrincipalId
    principalType: 'ServicePrincipal'
  }
}
