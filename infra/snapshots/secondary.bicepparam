// Send availability on: the secondary namespace in another region, its backlog queues and their
// roles, with a developer principal so that the developer's grants are compiled too.
using '../main.bicep'
extends '../main.bicepparam'

param enableSecondaryNamespace = true
param secondaryLocation = 'westus3'
param backlogQueueCount = 3
param principalId = '00000000-0000-0000-0000-00000000cccc'
