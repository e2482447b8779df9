/** POST /api/admin/redrive: move poison messages back after a fix. Admin (master) key only. */
import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';

import type { PushdrainApp } from '../shared/app';
import { ValidationError } from '../shared/errors';
import type { RedriveRequest } from '../shared/poison/redrive';
import { errorResponse, json } from './http-errors';
import { instance } from './instance';

/** Body `{queue?, batchId?, max?}`, all optional; an empty body redrives every poison queue. */
export function parseRedrive(text: string): RedriveRequest {
  if (text.trim() === '') return {};
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new ValidationError('the body must be a JSON object {queue?, batchId?, max?}', 400, 'invalid_request');
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new ValidationError('the body must be a JSON object', 400, 'invalid_request');
  const o = v as Record<string, unknown>;
  const unknown = Object.keys(o).filter((k) => !['queue', 'batchId', 'max'].includes(k));
  if (unknown.length > 0) throw new ValidationError(`unknown field(s): ${unknown.join(', ')}`, 400, 'invalid_request');
  const out: RedriveRequest = {};
  if (o.queue !== undefined) {
    if (typeof o.queue !== 'string') throw new ValidationError('queue must be a string', 400, 'invalid_request');
    out.queue = o.queue;
  }
  if (o.batchId !== undefined) {
    if (typeof o.batchId !== 'string' || !/^[a-z0-9][a-z0-9-]{0,63}$/.test(o.batchId)) throw new ValidationError('batchId is not a valid batch id', 400, 'invalid_request');
    out.batchId = o.batchId;
  }
  if (o.max !== undefined) {
    if (typeof o.max !== 'number') throw new ValidationError('max must be a number', 400, 'invalid_request');
    out.max = o.max;
  }
  return out;
}

export async function postRedrive(rt: PushdrainApp, req: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  try {
    const result = await rt.redrive(parseRedrive(await req.text()));
    context.log(`redrive: moved ${result.moved}, skipped ${result.skipped}`);
    return json(200, result);
  } catch (e) {
    return errorResponse(e, context);
  }
}

app.http('adminRedrive', {
  route: 'admin/redrive',
  methods: ['POST'],
  authLevel: 'admin',
  handler: (req, context) => postRedrive(instance(), req, context),
});
