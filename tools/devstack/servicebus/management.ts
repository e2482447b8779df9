/**
 * `<entity>/$management` request links: decode the operation, run it, and build the reply
 * (`statusCode` without a hyphen, unlike `$cbs`; `errorCondition` on failure).
 */
import { type Message, types } from 'rhea';

import type { EntityRegistry } from './entities';
import type { FaultState } from './faults';
import { type ManagementReply, OPERATIONS } from './management-ops';
import type { Stats } from './stats';

export interface ManagementDeps {
  registry: EntityRegistry;
  faults: FaultState;
  stats: Stats;
  now: () => number;
  log: (line: string) => void;
}

/** Runs one request against `entityPath` and returns the reply message. */
export function managementReply(entityPath: string, request: Message, deps: ManagementDeps): Message {
  const operation: unknown = request.application_properties?.operation;
  const name = typeof operation === 'string' ? operation : '';
  deps.stats.inc('management');
  deps.stats.inc(`management:${name.replace(/^com\.microsoft:/, '')}`);
  return toMessage(request, run(entityPath, name, request.body, deps));
}

function run(entityPath: string, operation: string, body: unknown, deps: ManagementDeps): ManagementReply {
  const op = OPERATIONS[operation];
  if (!op) {
    return {
      status: 501,
      condition: 'amqp:not-implemented',
      description: `${operation} is not supported by the development broker`,
    };
  }
  try {
    const target = deps.registry.sendTarget(entityPath);
    return op({
      target,
      dropSends: target !== undefined && deps.faults.drops(target.path),
      receive: deps.registry.receiveEntity(entityPath),
      body: isRecord(body) ? body : {},
      now: deps.now(),
    });
  } catch (err) {
    deps.log(`${operation} on ${entityPath} failed: ${String(err)}`);
    return { status: 400, condition: 'amqp:decode-error', description: String(err) };
  }
}

function toMessage(request: Message, reply: ManagementReply): Message {
  const props: Record<string, unknown> = {
    statusCode: types.wrap_int(reply.status),
    statusDescription: reply.description ?? (reply.status < 300 ? 'OK' : 'Error'),
  };
  if (reply.condition) props.errorCondition = reply.condition;
  return {
    correlation_id: request.message_id,
    to: request.reply_to,
    application_properties: props,
    body: reply.body ?? null,
  };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
