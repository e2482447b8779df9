/**
 * Claims-based security (`$cbs`): the SDK puts a SAS token before attaching to an entity.
 * Local development accepts any token.
 */
import { type Message, types } from 'rhea';

export const CBS_ADDRESS = '$cbs';

/** The reply to a `$cbs` request: 202 for put-token, 400 for anything else. Note the hyphen in `status-code`. */
export function cbsReply(request: Message): Message {
  const operation: unknown = request.application_properties?.operation;
  const ok = operation === 'put-token';
  return {
    correlation_id: request.message_id,
    to: request.reply_to,
    application_properties: {
      // An AMQP int, as Service Bus sends it: the .NET client casts it to Int32, and rhea would encode a bare number as uint.
      'status-code': types.wrap_int(ok ? 202 : 400),
      'status-description': ok ? 'Accepted' : `Unsupported $cbs operation ${String(operation)}`,
    },
    body: null,
  };
}
