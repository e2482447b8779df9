// The scaling agent switched on: it sends the management requests it only logs by default.
using '../main.bicep'
extends '../main.bicepparam'

param scaleAgentMode = 'apply'
param scaleMinInstances = 1
// Function keys only (PUSHDRAIN_AUTH=keys): no token settings.
param authMode = 'keys'
// The smallest Flex instance: its HTTP concurrency follows from its memory.
param instanceMemoryMB = 512
