// The scaling agent switched on: it sends the management requests it only logs by default.
using '../main.bicep'
extends '../main.bicepparam'

param scaleAgentMode = 'apply'
param scaleMinInstances = 1
