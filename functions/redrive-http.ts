/**
 * POST /api/ops/redrive: move poison messages back after a fix, or (`deadLetters: true`)
 * resubmit Service Bus dead letters. Admin (master) key only.
 */
import { describeSubmitter, submitterOf } from '../shared/auth/principal';
import { ValidationError } from '../shared/errors';
import { isValidBatchId } from '../shared/layout';
import type { DeadLetterRedriveRequest } from '../shared/poison/dead-letter-redrive';
import type { RedriveRequest } from '../shared/poison/redrive';
import { redactSecrets } from '../shared/redaction';
import { json } from './http-errors';
import { guardedRoute } from './http-route';

export type ParsedRedrive =
  { kind: 'poison'; request: RedriveRequest } | { kind: 'deadLetters'; request: DeadLetterRedriveRequest };

const invalid = (message: string): ValidationError => new ValidationError(message, { code: 'invalid_request' });

/**
 * Body `{queue?, batchId?, max?}` (Storage poison; an empty body redrives every poison queue), or
 * `{deadLetters: true, entity?, max?}` (Service Bus dead letters of every app entity, or one).
 */
export function parseRedrive(text: string): ParsedRedrive {
  if (text.trim() === '') return { kind: 'poison', request: {} };
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw invalid('the body must be a JSON object {queue?, batchId?, max?} or {deadLetters: true, entity?, max?}');
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw invalid('the body must be a JSON object');
  const o = v as Record<string, unknown>;
  const unknown = Object.keys(o).filter((k) => !['queue', 'batchId', 'max', 'deadLetters', 'entity'].includes(k));
  if (unknown.length > 0) throw invalid(`unknown field(s): ${unknown.join(', ')}`);
  if (o.deadLetters !== undefined && typeof o.deadLetters !== 'boolean')
    throw invalid('deadLetters must be true or false');
  if (o.max !== undefined && typeof o.max !== 'number') throw invalid('max must be a number');
  const max = o.max === undefined ? {} : { max: o.max };
  if (o.deadLetters === true) {
    const poisonOnly = ['queue', 'batchId'].filter((k) => o[k] !== undefined);
    if (poisonOnly.length > 0)
      throw invalid(`${poisonOnly.join(' and ')} select Storage poison, not dead letters (use entity)`);
    if (o.entity !== undefined && typeof o.entity !== 'string') throw invalid('entity must be a string');
    return { kind: 'deadLetters', request: { ...(o.entity !== undefined ? { entity: o.entity } : {}), ...max } };
  }
  if (o.entity !== undefined) throw invalid('entity selects a Service Bus entity: it needs deadLetters: true');
  const out: RedriveRequest = { ...max };
  if (o.queue !== undefined) {
    if (typeof o.queue !== 'string') throw invalid('queue must be a string');
    out.queue = o.queue;
  }
  if (o.batchId !== undefined) {
    if (typeof o.batchId !== 'string' || !isValidBatchId(o.batchId)) throw invalid('batchId is not a valid batch id');
    out.batchId = o.batchId;
  }
  return { kind: 'poison', request: out };
}

export const postRedrive = guardedRoute('opsRedrive', {
  route: 'ops/redrive',
  method: 'POST',
  keyLevel: 'admin',
  handle: async ({ app, req, context, caller }) => {
    const parsed = parseRedrive(await req.text());
    context.log(`redrive asked by ${describeSubmitter(submitterOf(caller))}`);
    if (parsed.kind === 'deadLetters') {
      const result = await app.redriveDeadLetters(parsed.request);
      context.log(
        `redrive: ${result.moved} dead letter(s) resubmitted, ${result.kept.length} kept, ${Object.keys(result.failed).length} entity failure(s)`,
      );
      // The errors are the SDK's words: not ours to vouch for.
      return json(200, {
        ...result,
        failed: Object.fromEntries(
          Object.entries(result.failed).map(([entity, error]) => [entity, redactSecrets(error)]),
        ),
      });
    }
    const result = await app.redrive(parsed.request);
    context.log(`redrive: moved ${result.moved}, skipped ${result.skipped}`);
    return json(200, result);
  },
});
