// What `azd up` deploys for a new environment: infra/main.bicepparam with no azd env values set
// but the ones the preprovision hook writes before every provision (the API's app registration).
using '../main.bicep'
extends '../main.bicepparam'

param apiAppId = '11111111-2222-3333-4444-555555555555'
param apiIdentifierUri = 'api://11111111-2222-3333-4444-555555555555'
