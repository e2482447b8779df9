// What `azd up` deploys for a new environment: infra/main.bicepparam with no azd env values set.
using '../main.bicep'
extends '../main.bicepparam'
