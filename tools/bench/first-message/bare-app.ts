/**
 * The bare `@azure/functions` app the start-to-first-message bench holds pushdrain beside: one
 * Service Bus topic trigger on the same subscription as pushdrain's drain, whose handler does
 * nothing. What it costs is the programming model's and the host's, with no app on top.
 */
import { app } from '@azure/functions';

app.serviceBusTopic('bareDrain', {
  connection: 'ServiceBusConnection',
  topicName: 'work-detected',
  subscriptionName: 'drain',
  handler: async () => {},
});
