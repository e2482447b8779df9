// The work store: claim-check blobs, pointer queues, reports, drain-slot leases, the Functions
// host's own state (AzureWebJobsStorage) and the Flex Consumption deployment container.
// Shared keys are off: every caller authenticates with Entra ID.

@description('Storage account name (3-24 lowercase letters and digits).')
param name string

@description('Region.')
param location string

@description('Tags.')
param tags object

@allowed([
  'Standard_LRS'
  'Standard_ZRS'
  'Standard_GRS'
  'Standard_GZRS'
])
@description('Redundancy.')
param sku string

@minValue(1)
@maxValue(64)
@description('Input queues work-0…work-{partitions-1}.')
param partitions int

@description('Container Flex Consumption deploys the app package to.')
param deploymentContainerName string

@minValue(0)
@description('Delete archive/ blobs this many days after their last change; 0 keeps them forever.')
param archiveRetentionDays int

@minValue(0)
@description('Delete work/ and results/ blobs (chunk and result intermediates) this many days after their last change; 0 keeps them forever.')
param intermediateRetentionDays int

@minValue(0)
@description('Delete a finished batch (its manifest in batches/, its report in reports/) and its owner-index entries (batches/owners/) this many days after their last change; 0 keeps them forever.')
param batchRetentionDays int = 0

// shared/names.ts CONTAINERS: the app never creates containers at run time.
var appContainers = [
  'work'
  'results'
  'batches'
  'reports'
  'incoming'
  'archive'
  'rejected'
  'leases'
]

// shared/names.ts allQueues(): work-{p} for each partition, results, a -poison twin of each, and
// deliveries-poison (batch-event deliveries past their retry schedule).
var baseQueues = concat(map(range(0, partitions), p => 'work-${p}'), [
  'results'
])
var queueNames = concat(
  flatten(map(baseQueues, q => [
    q
    '${q}-poison'
  ])),
  [
    'deliveries-poison'
  ]
)

resource account 'Microsoft.Storage/storageAccounts@2025-06-01' = {
  name: name
  location: location
  tags: tags
  kind: 'StorageV2'
  sku: {
    name: sku
  }
  properties: {
    accessTier: 'Hot'
    allowBlobPublicAccess: false
    allowCrossTenantReplication: false
    allowSharedKeyAccess: false
    defaultToOAuthAuthentication: true
    minimumTlsVersion: 'TLS1_2'
    supportsHttpsTrafficOnly: true
    publicNetworkAccess: 'Enabled'
    networkAcls: {
      bypass: 'AzureServices'
      defaultAction: 'Allow'
    }
  }
}

resource blobService 'Microsoft.Storage/storageAccounts/blobServices@2025-06-01' = {
  parent: account
  name: 'default'
}

resource containers 'Microsoft.Storage/storageAccounts/blobServices/containers@2025-06-01' = [
  for container in concat(appContainers, [deploymentContainerName]): {
    parent: blobService
    name: container
    properties: {
      publicAccess: 'None'
    }
  }
]

resource queueService 'Microsoft.Storage/storageAccounts/queueServices@2025-06-01' = {
  parent: account
  name: 'default'
}

resource queues 'Microsoft.Storage/storageAccounts/queueServices/queues@2025-06-01' = [
  for queue in queueNames: {
    parent: queueService
    name: queue
  }
]

// Ingested batch files are moved to archive/; nothing reads them again, so they expire.
var archiveRule = {
  name: 'expire-archive'
  enabled: true
  type: 'Lifecycle'
  definition: {
    filters: {
      blobTypes: [
        'blockBlob'
      ]
      prefixMatch: [
        'archive/'
      ]
    }
    actions: {
      baseBlob: {
        delete: {
          daysAfterModificationGreaterThan: archiveRetentionDays
        }
      }
    }
  }
}

// Chunk blobs and chunk results are only read while their batch runs (and by a redrive of its
// poison messages); the manifest and the report in batches/ and reports/ are kept.
var intermediateRule = {
  name: 'expire-intermediates'
  enabled: true
  type: 'Lifecycle'
  definition: {
    filters: {
      blobTypes: [
        'blockBlob'
      ]
      prefixMatch: [
        'work/'
        'results/'
      ]
    }
    actions: {
      baseBlob: {
        delete: {
          daysAfterModificationGreaterThan: intermediateRetentionDays
        }
      }
    }
  }
}

// A batch and its owner-index entries go by one rule, so a submitter's listing never keeps an entry
// for a batch that is gone. Batch ids start with b- or k- (shared/layout.ts): the open markers in
// batches/open/ are not matched (the finalizer removes them, and the watchdog reads them).
var batchRule = {
  name: 'expire-batches'
  enabled: true
  type: 'Lifecycle'
  definition: {
    filters: {
      blobTypes: [
        'blockBlob'
      ]
      prefixMatch: [
        'batches/b-'
        'batches/k-'
        'batches/owners/'
        'reports/'
      ]
    }
    actions: {
      baseBlob: {
        delete: {
          daysAfterModificationGreaterThan: batchRetentionDays
        }
      }
    }
  }
}

var lifecycleRules = concat(
  archiveRetentionDays > 0 ? [archiveRule] : [],
  intermediateRetentionDays > 0 ? [intermediateRule] : [],
  batchRetentionDays > 0 ? [batchRule] : []
)

resource lifecycle 'Microsoft.Storage/storageAccounts/managementPolicies@2025-06-01' = if (!empty(lifecycleRules)) {
  parent: account
  name: 'default'
  properties: {
    policy: {
      rules: lifecycleRules
    }
  }
}

output id string = account.id
output name string = account.name
output blobEndpoint string = account.properties.primaryEndpoints.blob
output queueEndpoint string = account.properties.primaryEndpoints.queue
output queueNames array = queueNames
