// Batch events on: operator webhooks, their secret in a Key Vault (a fixed, fake secret: the
// snapshot must not depend on the caller), and an allowlisted callback origin.
using '../main.bicep'
extends '../main.bicepparam'

param webhookUrl = 'https://hooks.example.com/pushdrain'
param webhookSecret = 'whsec_c25hcHNob3Qtb25seS1ub3QtYS1zZWNyZXQ='
param callbackOrigins = 'https://billing.example.com'
// Batches (and their owner-index entries) kept for a year.
param batchRetentionDays = 365
