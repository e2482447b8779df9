// Elastic Premium (EP1) instead of Flex Consumption, with both lifecycle rules off so that the
// management policy's `if` is compiled the other way too.
using '../main.bicep'
extends '../main.bicepparam'

param hostingPlan = 'premium'
param archiveRetentionDays = 0
param intermediateRetentionDays = 0
