// pushdrain: one full environment (azd-ready). Creates the resource group and everything in it.
// Names come from resourceToken so that two environments never collide; every connection is
// identity-based (no keys, no connection strings with secrets).
targetScope = 'subscription'

// ---------------------------------------------------------------------------------------------
// Environment
// ---------------------------------------------------------------------------------------------

@minLength(1)
@maxLength(64)
@description('Name of the azd environment. Seeds resourceToken and the default resource group name.')
param environmentName string

@minLength(1)
@description('Region for every resource. With hostingPlan = flex it must offer Flex Consumption.')
@metadata({
  azd: {
    type: 'location'
  }
})
param location string

@description('Resource group name. Empty means rg-<environmentName>.')
param resourceGroupName string = ''

@description('Object id of a user or service principal that gets the data roles (blob, queue, Service Bus send/receive) so that the local host can run against this environment. Empty grants nothing.')
param principalId string = ''

@allowed([
  'User'
  'ServicePrincipal'
])
@description('Kind of principal behind principalId.')
param principalType string = 'User'

// ---------------------------------------------------------------------------------------------
// Who may call the API (docs/SECURITY.md; the app registration comes from infra/hooks/entra-app.mjs)
// ---------------------------------------------------------------------------------------------

@allowed([
  'keys'
  'entra'
  'both'
])
@description('PUSHDRAIN_AUTH: entra = Microsoft Entra ID bearer tokens with app roles (routes anonymous at the platform, checked in the app); keys = function keys only; both = a function key at the platform and, when sent, a token that narrows the caller.')
param authMode string = 'entra'

@description('PUSHDRAIN_AUTH_CLIENT_APPS: the client app ids (comma-separated) allowed to call with a token (azp, or appid in v1 tokens). The preprovision hook adds the apps it registers (the API itself, for the status page, and the Azure CLI); empty makes the app refuse to start with authMode entra or both.')
param authClientApps string = ''

@description('PUSHDRAIN_AUTH_KEY_ROLES (authMode both): the app roles of a caller with a function key and no token, comma-separated, or none; empty gives none (a token is required beside the key) unless you grant roles here.')
param authKeyRoles string = ''

@description('The API\'s app registration (client) id, set by the preprovision hook; an accepted token audience.')
param apiAppId string = ''

@description('The API\'s identifier URI (api://<appId>), set by the preprovision hook; an accepted token audience.')
param apiIdentifierUri string = ''

// ---------------------------------------------------------------------------------------------
// Hosting
// ---------------------------------------------------------------------------------------------

@allowed([
  'flex'
  'premium'
])
@description('flex = Flex Consumption (FC1, scales to zero, the default); premium = Elastic Premium EP1 (always one warm instance).')
param hostingPlan string = 'flex'

@allowed([
  512
  2048
  4096
])
@description('Flex Consumption only: memory per instance. GB-s are billed at this size.')
param instanceMemoryMB int = 2048

@minValue(0)
@maxValue(1000)
@description('Flex Consumption only: HTTP requests one instance takes at once. 0: as many of the largest batches as the app\'s memory budget (a quarter of instanceMemoryMB) holds: 1 at 512 MB, 2 at 2,048, 4 at 4,096.')
param httpPerInstanceConcurrency int = 0

@minValue(40)
@maxValue(1000)
@description('Flex Consumption only: scale-out ceiling.')
param maximumInstanceCount int = 100

@minValue(1)
@maxValue(100)
@description('Elastic Premium only: scale-out ceiling.')
param premiumMaximumElasticWorkerCount int = 20

// ---------------------------------------------------------------------------------------------
// Storage
// ---------------------------------------------------------------------------------------------

@allowed([
  'Standard_LRS'
  'Standard_ZRS'
  'Standard_GRS'
  'Standard_GZRS'
])
@description('Redundancy of the storage account that holds work, results, reports and the queues.')
param storageSku string = 'Standard_LRS'

@minValue(0)
@maxValue(3650)
@description('Lifecycle rule: delete blobs in the archive container this many days after their last change. 0 disables the rule.')
param archiveRetentionDays int = 30

@minValue(0)
@maxValue(3650)
@description('Lifecycle rule: delete work/ and results/ blobs (chunk and result intermediates) this many days after their last change. Keep it above the longest time a poison message may wait for a redrive. 0 disables the rule.')
param intermediateRetentionDays int = 30

@minValue(0)
@maxValue(3650)
@description('Lifecycle rule: delete a batch (its manifest and report) and its owner-index entries this many days after their last change. Keep it above the longest a batch may stay open. 0 (the default) keeps batches forever.')
param batchRetentionDays int = 0

// ---------------------------------------------------------------------------------------------
// Monitoring
// ---------------------------------------------------------------------------------------------

@minValue(30)
@maxValue(730)
@description('Log Analytics retention in days (the first 31 days are included in the ingestion price).')
param logRetentionDays int = 30

@description('Email that receives the alerts (infra/core/monitor/alerts.bicep); empty: the action group has no receiver.')
param alertEmail string = ''

@description('Where alert descriptions point operators: the README\'s Operations section (use your repository\'s URL).')
param runbookUrl string = 'README.md#operations'

// ---------------------------------------------------------------------------------------------
// Send availability: a secondary Service Bus namespace with backlog queues (off by default)
// ---------------------------------------------------------------------------------------------

@description('Create a secondary Service Bus namespace with backlog queues: the publisher sends there when the primary fails for the failover interval, and the syphon functions move the messages back. Off by default; adds a second Standard namespace.')
param enableSecondaryNamespace bool = false

@description('Region of the secondary namespace; another region survives a regional outage. Empty means location.')
param secondaryLocation string = ''

@minValue(1)
@maxValue(10)
@description('PUSHDRAIN_BACKLOG_QUEUE_COUNT: backlog queues backlog-0…backlog-{N-1} in the secondary namespace (provisioned only with enableSecondaryNamespace). Each is one syphon trigger.')
param backlogQueueCount int = 2

@minValue(0)
@maxValue(3600000)
@description('PUSHDRAIN_FAILOVER_INTERVAL_MS: per entity, how long send failures are tolerated before sends go to the secondary; 0 = at once.')
param failoverIntervalMs int = 60000

@minValue(100)
@maxValue(600000)
@description('PUSHDRAIN_PING_INTERVAL_MS: while failed over, how often the primary is pinged (a sender link opened, nothing sent).')
param pingIntervalMs int = 10000

// ---------------------------------------------------------------------------------------------
// App settings. Defaults and ranges mirror TUNING_SPECS in shared/config/settings.ts
// (test/repo/infra-bicep.test.ts keeps them equal).
// ---------------------------------------------------------------------------------------------

@minValue(1)
@maxValue(64)
@description('PUSHDRAIN_PARTITIONS: input queues work-0…work-{P-1}. Provisioned here and passed to the app, so both always agree. Keep host.json maxConcurrentCalls at least 2 × partitions. The drain function scales out to about ceil(partitions × drainSlots ÷ 16) instances under a deep backlog.')
param partitions int = 4

@description('PUSHDRAIN_SWEEP_SCHEDULE: NCRONTAB (six fields, seconds first) of the incoming/ sweep timer. Each run lists incoming/ once.')
param sweepSchedule string = '0 */5 * * * *'

@minValue(1)
@maxValue(100000)
@description('PUSHDRAIN_CHUNK_SIZE: the largest chunk blob (one queue message each), in transactions; each batch is cut below it (docs/DESIGN.md, Chunk size).')
param chunkSize int = 20000

// 32 is the Azure maximum per receive and the cheapest per message; a lower value only adds
// queue transactions. Exposed so that a deployment can say so explicitly, not to be tuned down.
@minValue(1)
@maxValue(32)
@description('PUSHDRAIN_DEQUEUE_BATCH_SIZE: messages per receive call (Azure caps it at 32).')
param dequeueBatchSize int = 32

@minValue(1)
@maxValue(604800)
@description('PUSHDRAIN_VISIBILITY_TIMEOUT_SECONDS: how long a received message stays invisible while it is processed.')
param visibilityTimeoutSeconds int = 60

@minValue(0)
@maxValue(60000)
@description('PUSHDRAIN_MIN_IDLE_MS: first back-off delay when a queue is empty.')
param minIdleMs int = 100

@minValue(1)
@maxValue(600000)
@description('PUSHDRAIN_MAX_IDLE_MS: back-off cap; a dequeue task that reaches it exits.')
param maxIdleMs int = 5000

@minValue(1)
@maxValue(64)
@description('PUSHDRAIN_MAX_DEQUEUE_TASKS: dequeue tasks one drain may run at once.')
param maxDequeueTasks int = 8

@minValue(1)
@maxValue(1000000)
@description('PUSHDRAIN_MESSAGES_PER_TASK: one dequeue task per this many queued messages.')
param messagesPerTask int = 64

@minValue(1)
@maxValue(64)
@description('PUSHDRAIN_DRAIN_SLOTS: concurrent drains per input queue across all instances (blob-lease slots); also the most drains fan-out asks for per queue.')
param drainSlots int = 16

@minValue(1)
@maxValue(1000000)
@description('PUSHDRAIN_MESSAGES_PER_DRAIN: fan-out rule, one drain per this many queued messages of an input queue (at most drainSlots).')
param messagesPerDrain int = 512

@minValue(1)
@maxValue(16)
@description('PUSHDRAIN_RESULTS_DRAIN_SLOTS: concurrent drains of the results queue across all instances (they fold into one manifest per batch).')
param resultsDrainSlots int = 2

@minValue(1)
@maxValue(100)
@description('PUSHDRAIN_MAX_DEQUEUE_COUNT: deliveries after which a queue message moves to {queue}-poison.')
param maxDequeueCount int = 5

// host.json sets functionTimeout to 10 minutes; the cap of 540 s keeps a minute for the hand-over.
@minValue(1)
@maxValue(540)
@description('PUSHDRAIN_DRAIN_BUDGET_SECONDS: a drain stops taking work after this long and hands over with a continuation event. Keep it well under functionTimeout (10 min).')
param drainBudgetSeconds int = 240

@minValue(1024)
@maxValue(1073741824)
@description('PUSHDRAIN_MAX_BODY_BYTES: largest accepted request body as sent.')
param maxBodyBytes int = 104857600

@minValue(1024)
@maxValue(2147483648)
@description('PUSHDRAIN_MAX_INFLATED_BYTES: largest body after gzip inflation. Must be at least maxBodyBytes.')
param maxInflatedBytes int = 268435456

@minValue(1)
@maxValue(1000)
@description('PUSHDRAIN_SWEEP_MAX_FILES: batch files the incoming/ sweep ingests per run.')
param sweepMaxFiles int = 10

@minValue(1)
@maxValue(5000)
@description('PUSHDRAIN_SWEEP_MAX_BATCHES: open batches the sweep\'s recovery looks at per run.')
param sweepMaxBatches int = 100

@minValue(1)
@maxValue(604800)
@description('PUSHDRAIN_STALL_SECONDS: the sweep repairs an open batch with no chunk settled for this long.')
param stallSeconds int = 180

@minValue(3)
@maxValue(3600)
@description('PUSHDRAIN_INGEST_CLAIM_STALE_SECONDS: an ingest claim with no heartbeat for this long belongs to a request that died; a retry with the same Idempotency-Key takes it over.')
param ingestClaimStaleSeconds int = 30

@minValue(1)
@maxValue(604800)
@description('PUSHDRAIN_WATCHDOG_SLA_SECONDS: first watchdog check of an accepted batch, this long after acceptance.')
param watchdogSlaSeconds int = 600

@minValue(1)
@maxValue(20)
@description('PUSHDRAIN_WATCHDOG_MAX_CHECKS: watchdog checks (delay doubling) before an unfinished batch is failed.')
param watchdogMaxChecks int = 5

// Format: REGION:basisPoints pairs separated by commas (2000 bp = 20 %), whole numbers 0–10000.
// A region not listed, or a transaction without a region, is taxed at 0. The default is the
// architecture's table (DEFAULT_TAX_RATES in shared/config/tax-rates.ts); a bad value stops the
// app at start-up with an error that names PUSHDRAIN_TAX_RATES.
@minLength(1)
@description('PUSHDRAIN_TAX_RATES: tax rate per region in basis points, as REGION:bp pairs separated by commas.')
param taxRates string = 'EU:2000,UK:2000,CA:1300,AU:1000,JP:1000,US:0'

// List prices of a batch's cost estimate (USD, plain decimals; shared/config/price-settings.ts).
// The defaults are the app's own; set your agreement's. Flex's execution time is billed at this
// deployment's instance memory, so that price's memory follows instanceMemoryMB.
@description('PUSHDRAIN_PRICE_FLEX_GB_SECOND: Flex Consumption on-demand execution time, USD per GB-s.')
param priceFlexGbSecond string = '0.000026'
@description('PUSHDRAIN_PRICE_FLEX_MILLION_EXECUTIONS: Flex Consumption on-demand executions, USD per million.')
param priceFlexMillionExecutions string = '0.4'
@description('PUSHDRAIN_PRICE_BLOB_WRITE_10K: blob write operations, USD per 10,000.')
param priceBlobWrite10k string = '0.055'
@description('PUSHDRAIN_PRICE_BLOB_READ_10K: blob read and other operations, USD per 10,000.')
param priceBlobRead10k string = '0.0044'
@description('PUSHDRAIN_PRICE_QUEUE_10K: queue operations, USD per 10,000.')
param priceQueue10k string = '0.004'
@description('PUSHDRAIN_PRICE_SERVICE_BUS_MILLION_OPERATIONS: Service Bus Standard operations, USD per million.')
param priceServiceBusMillionOperations string = '0.8'
@allowed(['drop', 'write'])
@description('PUSHDRAIN_USAGE_LEFTOVERS: drop (usage after a batch\'s last manifest write is not counted, no request of its own) or write (one more manifest write per batch and per instance that served it: exact counts).')
param usageLeftovers string = 'drop'

// ---------------------------------------------------------------------------------------------
// Scaling agent (functions/scale-agent.ts; defaults and ranges mirror SCALE_SPECS)
// ---------------------------------------------------------------------------------------------

@allowed([
  'off'
  'dry-run'
  'apply'
])
@description('PUSHDRAIN_SCALE_MODE: dry-run decides and logs the exact management request; apply sends it (only then does the app identity get a custom role on the site: in dry-run and off it may not write the site).')
param scaleAgentMode string = 'dry-run'

@minLength(1)
@description('PUSHDRAIN_SCALE_RULES: depth:instances pairs (queued input messages summed over the partitions → always-ready drain instances).')
param scaleRules string = '512:1,4096:2,16384:4,65536:8'

@minValue(0)
@maxValue(1000)
@description('PUSHDRAIN_SCALE_MIN_INSTANCES: the floor when idle (0 = scale to zero on Flex; Premium never goes below one).')
param scaleMinInstances int = 0

@minValue(5)
@maxValue(3600)
@description('PUSHDRAIN_SCALE_INTERVAL_SECONDS: at most one depth sample and decision per interval, across all instances.')
param scaleIntervalSeconds int = 30

@minValue(0)
@maxValue(86400)
@description('PUSHDRAIN_SCALE_UP_COOLDOWN_SECONDS: least time between raises of the floor.')
param scaleUpCooldownSeconds int = 60

@minValue(60)
@maxValue(86400)
@description('PUSHDRAIN_SCALE_DOWN_COOLDOWN_SECONDS: the floor is lowered only after this long without a sample that wanted it.')
param scaleDownCooldownSeconds int = 900

// ---------------------------------------------------------------------------------------------
// Batch events (shared/config/event-settings.ts)
// ---------------------------------------------------------------------------------------------

@description('PUSHDRAIN_WEBHOOK_URL: https URLs (comma-separated) that receive every batch\'s completed/failed event; empty sends none.')
param webhookUrl string = ''

@secure()
@description('PUSHDRAIN_WEBHOOK_SECRET: the Standard Webhooks secret (whsec_…) that signs them. Required with webhookUrl or callbackOrigins; stored in a Key Vault this template creates, and the app setting is a Key Vault reference.')
param webhookSecret string = ''

@minLength(1)
@description('PUSHDRAIN_WEBHOOK_RETRY_SCHEDULE: the wait before each retry, in seconds; after the last, a delivery goes to deliveries-poison.')
param webhookRetrySchedule string = '5,300,1800,7200,18000,36000,36000'

@secure()
@description('PUSHDRAIN_CALLBACK_SIGNING_KEY: the ed25519 seed (whsk_ and the base64 of 32 random bytes) that signs Callback-Url deliveries (v1a). Required with callbackOrigins (the deployment fails without it): its own key, so that no holder of the webhook secret can sign a callback; stored in the Key Vault beside the webhook secret.')
param callbackSigningKey string = ''

@description('PUSHDRAIN_CALLBACK_ORIGINS: origins (comma-separated) a client may name in Callback-Url; empty refuses every callback.')
param callbackOrigins string = ''

// ---------------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------------

var resourceToken = toLower(uniqueString(subscription().id, environmentName, location))
var tags = {
  'azd-env-name': environmentName
}
var functionAppName = 'func-api-${resourceToken}'
// Flex Consumption reads the app package from this container (with the managed identity).
var deploymentContainerName = 'app-package-${take(functionAppName, 32)}-${take(resourceToken, 7)}'

// The one list of Service Bus entities; the local development broker serves the same file.
var serviceBusEntities = loadJsonContent('servicebus-entities.json')

resource rg 'Microsoft.Resources/resourceGroups@2025-04-01' = {
  name: !empty(resourceGroupName) ? resourceGroupName : 'rg-${environmentName}'
  location: location
  tags: tags
}

// ---------------------------------------------------------------------------------------------
// Resources
// ---------------------------------------------------------------------------------------------

module identity 'core/identity/user-assigned-identity.bicep' = {
  name: 'identity'
  scope: rg
  params: {
    name: 'id-api-${resourceToken}'
    location: location
    tags: tags
  }
}

module monitoring 'core/monitor/monitoring.bicep' = {
  name: 'monitoring'
  scope: rg
  params: {
    logAnalyticsName: 'log-${resourceToken}'
    applicationInsightsName: 'appi-${resourceToken}'
    location: location
    tags: tags
    retentionInDays: logRetentionDays
  }
}

module storage 'core/storage/storage-account.bicep' = {
  name: 'storage'
  scope: rg
  params: {
    name: 'st${resourceToken}'
    location: location
    tags: tags
    sku: storageSku
    partitions: partitions
    deploymentContainerName: deploymentContainerName
    archiveRetentionDays: archiveRetentionDays
    intermediateRetentionDays: intermediateRetentionDays
    batchRetentionDays: batchRetentionDays
  }
}

module serviceBus 'core/messaging/servicebus-namespace.bicep' = {
  name: 'servicebus'
  scope: rg
  params: {
    name: 'sb-${resourceToken}'
    location: location
    tags: tags
    topics: serviceBusEntities.topics
    queues: serviceBusEntities.queues
  }
}

// Data-plane roles for the app identity (and optionally the developer), granted before the app
// starts so that its first host start can already read its package and take its leases.
module rbac 'app/rbac.bicep' = {
  name: 'rbac'
  scope: rg
  params: {
    identityPrincipalId: identity.outputs.principalId
    storageAccountName: storage.outputs.name
    serviceBusNamespaceName: serviceBus.outputs.name
    applicationInsightsName: monitoring.outputs.applicationInsightsName
    principalId: principalId
    principalType: principalType
  }
}

module sendAvailability 'app/send-availability.bicep' = if (enableSecondaryNamespace) {
  name: 'send-availability'
  scope: rg
  params: {
    name: 'sb2-${resourceToken}'
    location: !empty(secondaryLocation) ? secondaryLocation : location
    tags: tags
    backlogQueueCount: backlogQueueCount
    identityPrincipalId: identity.outputs.principalId
    principalId: principalId
    principalType: principalType
  }
}

// ---------------------------------------------------------------------------------------------
// App settings (identity-based connections only)
// ---------------------------------------------------------------------------------------------

var connectionSettings = {
  StorageConnection__blobServiceUri: storage.outputs.blobEndpoint
  StorageConnection__queueServiceUri: storage.outputs.queueEndpoint
  StorageConnection__credential: 'managedidentity'
  StorageConnection__clientId: identity.outputs.clientId
  ServiceBusConnection__fullyQualifiedNamespace: serviceBus.outputs.fullyQualifiedNamespace
  ServiceBusConnection__credential: 'managedidentity'
  ServiceBusConnection__clientId: identity.outputs.clientId
}

var tuningSettings = {
  PUSHDRAIN_PARTITIONS: string(partitions)
  PUSHDRAIN_SWEEP_SCHEDULE: sweepSchedule
  PUSHDRAIN_CHUNK_SIZE: string(chunkSize)
  PUSHDRAIN_DEQUEUE_BATCH_SIZE: string(dequeueBatchSize)
  PUSHDRAIN_VISIBILITY_TIMEOUT_SECONDS: string(visibilityTimeoutSeconds)
  PUSHDRAIN_MIN_IDLE_MS: string(minIdleMs)
  PUSHDRAIN_MAX_IDLE_MS: string(maxIdleMs)
  PUSHDRAIN_MAX_DEQUEUE_TASKS: string(maxDequeueTasks)
  PUSHDRAIN_MESSAGES_PER_TASK: string(messagesPerTask)
  PUSHDRAIN_DRAIN_SLOTS: string(drainSlots)
  PUSHDRAIN_MESSAGES_PER_DRAIN: string(messagesPerDrain)
  PUSHDRAIN_RESULTS_DRAIN_SLOTS: string(resultsDrainSlots)
  PUSHDRAIN_MAX_DEQUEUE_COUNT: string(maxDequeueCount)
  PUSHDRAIN_DRAIN_BUDGET_SECONDS: string(drainBudgetSeconds)
  PUSHDRAIN_MAX_BODY_BYTES: string(maxBodyBytes)
  PUSHDRAIN_MAX_INFLATED_BYTES: string(maxInflatedBytes)
  PUSHDRAIN_SWEEP_MAX_FILES: string(sweepMaxFiles)
  PUSHDRAIN_SWEEP_MAX_BATCHES: string(sweepMaxBatches)
  PUSHDRAIN_STALL_SECONDS: string(stallSeconds)
  PUSHDRAIN_INGEST_CLAIM_STALE_SECONDS: string(ingestClaimStaleSeconds)
  PUSHDRAIN_WATCHDOG_SLA_SECONDS: string(watchdogSlaSeconds)
  PUSHDRAIN_WATCHDOG_MAX_CHECKS: string(watchdogMaxChecks)
  PUSHDRAIN_TAX_RATES: taxRates
  // Read even without a secondary namespace (harmless then): the app validates every setting.
  PUSHDRAIN_BACKLOG_QUEUE_COUNT: string(backlogQueueCount)
  PUSHDRAIN_FAILOVER_INTERVAL_MS: string(failoverIntervalMs)
  PUSHDRAIN_PING_INTERVAL_MS: string(pingIntervalMs)
  PUSHDRAIN_PRICE_FLEX_GB_SECOND: priceFlexGbSecond
  PUSHDRAIN_PRICE_FLEX_MILLION_EXECUTIONS: priceFlexMillionExecutions
  PUSHDRAIN_PRICE_FLEX_MEMORY_MB: string(instanceMemoryMB)
  // What the app's memory budget is a share of: the instance size, not the machine under it.
  PUSHDRAIN_INSTANCE_MEMORY_MB: string(instanceMemoryMB)
  PUSHDRAIN_PRICE_BLOB_WRITE_10K: priceBlobWrite10k
  PUSHDRAIN_PRICE_BLOB_READ_10K: priceBlobRead10k
  PUSHDRAIN_PRICE_QUEUE_10K: priceQueue10k
  PUSHDRAIN_PRICE_SERVICE_BUS_MILLION_OPERATIONS: priceServiceBusMillionOperations
  PUSHDRAIN_USAGE_LEFTOVERS: usageLeftovers
  // Provisioned names carry no prefix: the queues and containers above are work-0, results, …
  // The prefix exists for test isolation (each test run gets its own names in one account).
  PUSHDRAIN_NAME_PREFIX: ''
}

// The scaling agent manages this deployment's own site: every value comes from the template.
var scaleAgentSettings = {
  PUSHDRAIN_SCALE_MODE: scaleAgentMode
  PUSHDRAIN_SCALE_PLAN: hostingPlan
  PUSHDRAIN_SCALE_SUBSCRIPTION_ID: subscription().subscriptionId
  PUSHDRAIN_SCALE_RESOURCE_GROUP: rg.name
  PUSHDRAIN_SCALE_SITE_NAME: functionAppName
  PUSHDRAIN_SCALE_CLIENT_ID: identity.outputs.clientId
  PUSHDRAIN_SCALE_RULES: scaleRules
  PUSHDRAIN_SCALE_MIN_INSTANCES: string(scaleMinInstances)
  PUSHDRAIN_SCALE_MAX_INSTANCES: string(hostingPlan == 'flex' ? maximumInstanceCount : premiumMaximumElasticWorkerCount)
  PUSHDRAIN_SCALE_INTERVAL_SECONDS: string(scaleIntervalSeconds)
  PUSHDRAIN_SCALE_UP_COOLDOWN_SECONDS: string(scaleUpCooldownSeconds)
  PUSHDRAIN_SCALE_DOWN_COOLDOWN_SECONDS: string(scaleDownCooldownSeconds)
}

// Tokens of this tenant, validated in the app against its JWKS (Flex Consumption does not enforce
// App Service Authentication: docs/DESIGN.md). An empty audience fails at start, naming the setting.
var loginEndpoint = environment().authentication.loginEndpoint
var authSettings = authMode == 'keys' ? { PUSHDRAIN_AUTH: 'keys' } : {
  PUSHDRAIN_AUTH: authMode
  PUSHDRAIN_AUTH_ISSUER: '${loginEndpoint}${tenant().tenantId}/v2.0'
  PUSHDRAIN_AUTH_AUDIENCE: join(filter([apiAppId, apiIdentifierUri], a => !empty(a)), ',')
  PUSHDRAIN_AUTH_JWKS_URL: '${loginEndpoint}${tenant().tenantId}/discovery/v2.0/keys'
  PUSHDRAIN_AUTH_CLIENT_APPS: authClientApps
  PUSHDRAIN_AUTH_KEY_ROLES: authKeyRoles
}

// Only with the secondary namespace; unset, the app sends to the primary alone and registers no syphon.
var sendAvailabilitySettings = enableSecondaryNamespace ? {
  ServiceBusSecondaryConnection__fullyQualifiedNamespace: sendAvailability!.outputs.fullyQualifiedNamespace
  ServiceBusSecondaryConnection__credential: 'managedidentity'
  ServiceBusSecondaryConnection__clientId: identity.outputs.clientId
} : {}

// Only with webhooks or callbacks: the vault holds the secret, the app reads it through a Key Vault reference.
var keyVaultName = 'kv-${take(resourceToken, 21)}'
var webhookSecretName = 'pushdrain-webhook-secret'
var callbackKeySecretName = 'pushdrain-callback-signing-key'
// The app needs the secret exactly when it has somewhere to send (it refuses to start otherwise).
var eventsOn = !empty(webhookUrl) || !empty(callbackOrigins)
var callbacksOn = !empty(callbackOrigins)
// No callback key is derived from another secret (the app refuses to start without one too):
// callbacks allowed and no key stops the deployment here, naming the parameter.
var callbackKey = callbacksOn && empty(callbackSigningKey)
  ? fail('callbackSigningKey (PUSHDRAIN_CALLBACK_SIGNING_KEY) is required with callbackOrigins: whsk_ and the base64 of 32 random bytes (openssl rand -base64 32)')
  : callbackSigningKey

module vault 'core/security/key-vault.bicep' = if (eventsOn) {
  name: 'key-vault'
  scope: rg
  params: {
    name: keyVaultName
    location: location
    tags: tags
    secretName: webhookSecretName
    webhookSecret: webhookSecret
    storeCallbackKey: callbacksOn
    callbackSigningKey: callbackKey
    callbackKeySecretName: callbackKeySecretName
    identityPrincipalId: identity.outputs.principalId
  }
}

var eventSettings = union(
  {
    PUSHDRAIN_WEBHOOK_URL: webhookUrl
    PUSHDRAIN_WEBHOOK_RETRY_SCHEDULE: webhookRetrySchedule
    PUSHDRAIN_CALLBACK_ORIGINS: callbackOrigins
  },
  // By name (versionless): a rotated secret is picked up without a redeploy.
  eventsOn ? { PUSHDRAIN_WEBHOOK_SECRET: '@Microsoft.KeyVault(VaultName=${keyVaultName};SecretName=${webhookSecretName})' } : {},
  callbacksOn
    ? { PUSHDRAIN_CALLBACK_SIGNING_KEY: '@Microsoft.KeyVault(VaultName=${keyVaultName};SecretName=${callbackKeySecretName})' }
    : {}
)

// What a quarter of each instance size holds of the largest batch, as the app's admission counts it
// (shared/ingest/ingest-memory.ts: a gzip body at the cap, 256 MB inflated): a request beyond it goes
// to another instance instead of a 503. test/repo/infra-flex.test.ts computes it from the app.
var httpConcurrencyByMemory = {
  '512': 1
  '2048': 2
  '4096': 4
}

module api 'app/function-app.bicep' = {
  name: 'api'
  scope: rg
  params: {
    name: functionAppName
    planName: 'plan-${resourceToken}'
    location: location
    tags: tags
    serviceName: 'api'
    hostingPlan: hostingPlan
    storageAccountName: storage.outputs.name
    deploymentContainerUrl: '${storage.outputs.blobEndpoint}${deploymentContainerName}'
    identityId: identity.outputs.id
    identityClientId: identity.outputs.clientId
    applicationInsightsConnectionString: monitoring.outputs.applicationInsightsConnectionString
    instanceMemoryMB: instanceMemoryMB
    maximumInstanceCount: maximumInstanceCount
    httpPerInstanceConcurrency: httpPerInstanceConcurrency > 0
      ? httpPerInstanceConcurrency
      : httpConcurrencyByMemory[string(instanceMemoryMB)]
    premiumMaximumElasticWorkerCount: premiumMaximumElasticWorkerCount
    appSettings: union(connectionSettings, sendAvailabilitySettings, tuningSettings, scaleAgentSettings, eventSettings, authSettings)
  }
  dependsOn: [
    rbac
    vault
  ]
}

// Alerts: poison, dead letters, stalled and failed batches, function failures, HTTP 5xx.
module alerts 'core/monitor/alerts.bicep' = {
  name: 'alerts'
  scope: rg
  params: {
    namePrefix: resourceToken
    tags: tags
    applicationInsightsId: monitoring.outputs.applicationInsightsId
    serviceBusNamespaceId: serviceBus.outputs.id
    functionAppId: api.outputs.id
    alertEmail: alertEmail
    runbookUrl: runbookUrl
    stallSeconds: stallSeconds
  }
}

// The agent's least-privilege role on the site (infra/app/scale-agent.bicep says why not a built-in one),
// only when it acts: the identity that parses internet input may not rewrite its own app settings
// (issuer, JWKS URL, auth mode) while the agent merely logs.
module scaleAgent 'app/scale-agent.bicep' = if (scaleAgentMode == 'apply') {
  name: 'scale-agent'
  scope: rg
  params: {
    siteName: api.outputs.name
    identityPrincipalId: identity.outputs.principalId
    hostingPlan: hostingPlan
  }
}

// ---------------------------------------------------------------------------------------------
// Outputs (azd writes them to .azure/<env>/.env; docs/DEPLOY.md uses them)
// ---------------------------------------------------------------------------------------------

output AZURE_LOCATION string = location
output AZURE_TENANT_ID string = tenant().tenantId
output AZURE_RESOURCE_GROUP string = rg.name
output AZURE_FUNCTION_APP_NAME string = api.outputs.name
output SERVICE_API_NAME string = api.outputs.name
output SERVICE_API_URI string = api.outputs.uri
output AZURE_STORAGE_ACCOUNT_NAME string = storage.outputs.name
output AZURE_STORAGE_BLOB_ENDPOINT string = storage.outputs.blobEndpoint
output AZURE_STORAGE_QUEUE_ENDPOINT string = storage.outputs.queueEndpoint
output AZURE_SERVICEBUS_NAMESPACE string = serviceBus.outputs.name
output AZURE_SERVICEBUS_FQDN string = serviceBus.outputs.fullyQualifiedNamespace
output AZURE_MANAGED_IDENTITY_CLIENT_ID string = identity.outputs.clientId
// The connection string names the ingestion endpoint; with local auth off it grants nothing by itself.
output APPLICATIONINSIGHTS_CONNECTION_STRING string = monitoring.outputs.applicationInsightsConnectionString
output PUSHDRAIN_AUTH string = authMode
output PUSHDRAIN_API_SCOPE string = empty(apiIdentifierUri) ? '' : '${apiIdentifierUri}/.default'
output AZURE_SERVICEBUS_SECONDARY_FQDN string = enableSecondaryNamespace ? sendAvailability!.outputs.fullyQualifiedNamespace : ''
