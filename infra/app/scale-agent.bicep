// The scaling agent's permission: a custom role with only the actions it uses, assigned to the
// app identity on the function app alone (not its plan, not the resource group).
//
// Why not Website Contributor on the site: that role also lets its holder delete the site,
// publish code, read publishing credentials, restart it, manage slots and backups. The agent
// needs two actions per plan:
//   Flex Consumption: read the site and PATCH it (functionAppConfig.scaleAndConcurrency);
//   Elastic Premium:  read config/web and PATCH it (minimumElasticInstanceCount, functionAppScaleLimit).
// The definition is created in the resource group (its assignable scope); the assignment's
// scope is the site.

@description('Function app (site) the agent manages.')
param siteName string

@description('Principal id of the app\'s user-assigned identity (the agent runs in the app).')
param identityPrincipalId string

@allowed([
  'flex'
  'premium'
])
@description('flex = Flex Consumption; premium = Elastic Premium. Picks the two actions the agent needs.')
param hostingPlan string

var actions = hostingPlan == 'flex' ? [
  'Microsoft.Web/sites/read'
  'Microsoft.Web/sites/write'
] : [
  'Microsoft.Web/sites/config/read'
  'Microsoft.Web/sites/config/write'
]

resource site 'Microsoft.Web/sites@2025-03-01' existing = {
  name: siteName
}

resource agentRole 'Microsoft.Authorization/roleDefinitions@2022-04-01' = {
  name: guid(resourceGroup().id, siteName, 'pushdrain-scale-agent', hostingPlan)
  properties: {
    roleName: 'pushdrain scaling agent (${siteName}, ${hostingPlan})'
    description: 'Reads and sets the scale settings of one function app: always-ready instances and the scale-out ceiling.'
    type: 'CustomRole'
    permissions: [
      {
        actions: actions
        notActions: []
        dataActions: []
        notDataActions: []
      }
    ]
    assignableScopes: [
      resourceGroup().id
    ]
  }
}

resource agentRoleAssignment 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(site.id, identityPrincipalId, agentRole.id)
  scope: site
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', agentRole.name)
    principalId: identityPrincipalId
    principalType: 'ServicePrincipal'
  }
}

output roleDefinitionName string = agentRole.name
output actions array = actions
