// The scaling agent switched on: it sends the management requests it only logs by default.
using '../main.bicep'
extends '../main.bicepparam'

param scaleAgentMode = 'apply'
param scaleMinInstances = 1
// Function keys only (PUSHDRAIN_AUTH=keys): no token settings.
param authMode = 'keys'
