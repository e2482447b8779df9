// The parameters azd deploys infra/main.bicep with. azd prefers this file over a
// main.parameters.json and builds it with the azd environment's values as environment variables.
using 'main.bicep'

param environmentName = readEnvironmentVariable('AZURE_ENV_NAME')
param location = readEnvironmentVariable('AZURE_LOCATION')
param principalId = readEnvironmentVariable('AZURE_PRINCIPAL_ID', '')
param principalType = readEnvironmentVariable('AZURE_PRINCIPAL_TYPE', 'User')
param hostingPlan = readEnvironmentVariable('PUSHDRAIN_HOSTING_PLAN', 'flex')
param partitions = int(readEnvironmentVariable('PUSHDRAIN_PARTITIONS', '4'))
param scaleAgentMode = readEnvironmentVariable('PUSHDRAIN_SCALE_MODE', 'dry-run')
param enableSecondaryNamespace = bool(readEnvironmentVariable('PUSHDRAIN_ENABLE_SECONDARY_NAMESPACE', 'false'))
param webhookUrl = readEnvironmentVariable('PUSHDRAIN_WEBHOOK_URL', '')
param webhookSecret = readEnvironmentVariable('PUSHDRAIN_WEBHOOK_SECRET', '')
param callbackOrigins = readEnvironmentVariable('PUSHDRAIN_CALLBACK_ORIGINS', '')
param authMode = readEnvironmentVariable('PUSHDRAIN_AUTH', 'entra')
param authClientApps = readEnvironmentVariable('PUSHDRAIN_AUTH_CLIENT_APPS', '')
param authKeyRoles = readEnvironmentVariable('PUSHDRAIN_AUTH_KEY_ROLES', '')
param apiAppId = readEnvironmentVariable('PUSHDRAIN_API_APP_ID', '')
param apiIdentifierUri = readEnvironmentVariable('PUSHDRAIN_API_IDENTIFIER_URI', '')
