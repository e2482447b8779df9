/** Service Bus topic `work-detected`, subscription `aggregate` (role = output): the controller. */
import { app } from '@azure/functions';

import { SUBSCRIPTIONS, TOPIC } from '../shared/names';
import { onWorkDetected } from './drain';
import { instance } from './instance';

app.serviceBusTopic('aggregate', {
  connection: 'ServiceBusConnection',
  topicName: TOPIC,
  subscriptionName: SUBSCRIPTIONS.aggregate.name,
  handler: async (message, context) => {
    await onWorkDetected(instance(), message, context);
  },
});
