// Elastic Premium (EP1) instead of Flex Consumption, with both lifecycle rules off so that the
// management policy's `if` is compiled the other way too; and an alert email, so that the action
// group is compiled with its receiver.
using '../main.bicep'
extends '../main.bicepparam'

param hostingPlan = 'premium'
param archiveRetentionDays = 0
param intermediateRetentionDays = 0
param alertEmail = 'ops@example.com'
// With PUSHDRAIN_AUTH=both: the key check at the platform stays, and the token settings are set.
param authMode = 'both'
param apiAppId = '11111111-2222-3333-4444-555555555555'
