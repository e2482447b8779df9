/** Service Bus topic `work-detected`, subscription `drain` (role = input): drain an input queue. */
import { app } from '@azure/functions';

import { FUNCTION_NAMES, SUBSCRIPTIONS, TOPIC } from '../shared/names';
import { instance } from './instance';
import { onWorkDetected } from './work-detected';

app.serviceBusTopic(FUNCTION_NAMES.drain, {
  connection: 'ServiceBusConnection',
  topicName: TOPIC,
  subscriptionName: SUBSCRIPTIONS.drain.name,
  handler: async (message, context) => {
    await onWorkDetected(instance(), message, context);
  },
});
