// Log Analytics workspace + workspace-based Application Insights with local (key) auth off:
// telemetry is accepted only with an Entra token (APPLICATIONINSIGHTS_AUTHENTICATION_STRING).

@description('Log Analytics workspace name.')
param logAnalyticsName string

@description('Application Insights component name.')
param applicationInsightsName string

@description('Region.')
param location string

@description('Tags.')
param tags object

@minValue(30)
@maxValue(730)
@description('Workspace retention in days.')
param retentionInDays int

resource logAnalytics 'Microsoft.OperationalInsights/workspaces@2025-07-01' = {
  name: logAnalyticsName
  location: location
  tags: tags
  properties: {
    sku: {
      name: 'PerGB2018'
    }
    retentionInDays: retentionInDays
    features: {
      enableLogAccessUsingOnlyResourcePermissions: true
    }
  }
}

resource applicationInsights 'Microsoft.Insights/components@2020-02-02' = {
  name: applicationInsightsName
  location: location
  tags: tags
  kind: 'web'
  properties: {
    Application_Type: 'web'
    WorkspaceResourceId: logAnalytics.id
    IngestionMode: 'LogAnalytics'
    // No instrumentation-key ingestion: the app identity needs Monitoring Metrics Publisher.
    DisableLocalAuth: true
  }
}

output logAnalyticsId string = logAnalytics.id
output applicationInsightsName string = applicationInsights.name
output applicationInsightsId string = applicationInsights.id
output applicationInsightsConnectionString string = applicationInsights.properties.ConnectionString
