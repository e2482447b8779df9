// Elastic Premium (EP1) instead of Flex Consumption, with both lifecycle rules off so that the
// management policy's `if` is compiled the other way too; and an alert email, so that the action
// group is compiled with its receiver.
using '../main.bicep'
extends '../main.bicepparam'

param hostingPlan = 'premium'
param archiveRetentionDays = 0
param intermediateRetentionDays = 0
param alertEmail = 'ops@example.com'
