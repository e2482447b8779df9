// Alerts as code: an action group and one metric alert per way the pipeline can stop telling
// anyone. Metric alerts only: they are evaluated by Azure Monitor on metrics already collected,
// so none polls Storage and an idle app costs nothing beyond the rules' flat price. The pipeline's
// own conditions (poison, stalled and failed batches) are the app's pushdrain.* OpenTelemetry
// metrics, which Application Insights keeps as custom metrics (namespace azure.applicationinsights).

@description('Prefix of the rule and action group names (the resourceToken).')
param namePrefix string

@description('Tags.')
param tags object

@description('Application Insights component the app sends its telemetry to.')
param applicationInsightsId string

@description('The primary Service Bus namespace (work-detected topic, watchdog queue).')
param serviceBusNamespaceId string

@description('The function app.')
param functionAppId string

@description('Email for the action group; empty: the rules fire into a group with no receiver (portal and API only).')
param alertEmail string = ''

@description('Where each rule description points: the README\'s Operations section, as the operators read it.')
param runbookUrl string

@description('PUSHDRAIN_STALL_SECONDS, quoted in the stalled-batch rule.')
param stallSeconds int

resource actionGroup 'Microsoft.Insights/actionGroups@2023-01-01' = {
  name: 'ag-${namePrefix}'
  location: 'global'
  tags: tags
  properties: {
    // Shown in SMS and email subjects: 12 characters at most.
    groupShortName: 'pushdrain'
    enabled: true
    emailReceivers: empty(alertEmail)
      ? []
      : [
          {
            name: 'operators'
            emailAddress: alertEmail
            useCommonAlertSchema: true
          }
        ]
  }
}

var custom = 'azure.applicationinsights'

// One row per rule: what it watches, on which resource, and what the operator should do.
var rules = [
  {
    name: 'servicebus-dead-letters'
    scope: serviceBusNamespaceId
    namespace: 'Microsoft.ServiceBus/namespaces'
    metric: 'DeadletteredMessages'
    aggregation: 'Maximum'
    severity: 2
    description: 'Service Bus holds dead-lettered messages (WorkDetected events or watchdog checks that could not be delivered). Redrive with `pushdrain redrive --dead-letters` once the cause is fixed. See ${runbookUrl}'
  }
  {
    name: 'poison-messages'
    scope: applicationInsightsId
    namespace: custom
    metric: 'pushdrain.poison.moves'
    aggregation: 'Total'
    severity: 2
    description: 'A queue message was moved to a poison queue: its chunk failed and its batch will be reported failed. Inspect with `pushdrain status`, redrive with `pushdrain redrive` after the fix. See ${runbookUrl}'
  }
  {
    name: 'stalled-batch'
    scope: applicationInsightsId
    namespace: custom
    metric: 'pushdrain.batches.stalled'
    aggregation: 'Total'
    severity: 2
    description: 'A batch made no progress past PUSHDRAIN_STALL_SECONDS (${stallSeconds} s) or its watchdog SLA; the watchdog or recovery re-woke it. Follow its trace and `pushdrain status`. See ${runbookUrl}'
  }
  {
    name: 'failed-batches'
    scope: applicationInsightsId
    namespace: custom
    metric: 'pushdrain.batches.failed'
    aggregation: 'Total'
    severity: 1
    description: 'A batch ended failed (a poisoned chunk, or the watchdog gave up): its client gets no report. See ${runbookUrl}'
  }
  {
    name: 'function-failures'
    scope: applicationInsightsId
    namespace: 'microsoft.insights/components'
    metric: 'requests/failed'
    aggregation: 'Count'
    severity: 2
    description: 'Function invocations failed (drains that threw and will be redelivered, or HTTP requests that failed). See ${runbookUrl}'
  }
  {
    name: 'http-5xx'
    scope: functionAppId
    namespace: 'Microsoft.Web/sites'
    metric: 'Http5xx'
    aggregation: 'Total'
    severity: 1
    description: 'The HTTP API answered 5xx: clients submitting batches are turned away. See ${runbookUrl}'
  }
]

resource alerts 'Microsoft.Insights/metricAlerts@2026-01-01' = [
  for rule in rules: {
    name: 'alert-${rule.name}-${namePrefix}'
    location: 'global'
    tags: tags
    properties: {
      description: rule.description
      severity: rule.severity
      enabled: true
      scopes: [
        rule.scope
      ]
      evaluationFrequency: 'PT5M'
      windowSize: 'PT15M'
      autoMitigate: true
      criteria: {
        'odata.type': 'Microsoft.Azure.Monitor.SingleResourceMultipleMetricCriteria'
        allOf: [
          {
            criterionType: 'StaticThresholdCriterion'
            name: rule.name
            metricNamespace: rule.namespace
            metricName: rule.metric
            timeAggregation: rule.aggregation
            operator: 'GreaterThan'
            threshold: 0
            // A custom metric exists only once the app has sent it: the rule is valid before that.
            skipMetricValidation: rule.namespace == custom
          }
        ]
      }
      actions: [
        {
          actionGroupId: actionGroup.id
        }
      ]
    }
  }
]

output actionGroupId string = actionGroup.id
output alertNames array = [for (rule, i) in rules: alerts[i].name]
