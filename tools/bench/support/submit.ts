/** Submits a batch through the real POST /api/batches handler, as the Functions host would call it. */
import { HttpRequest, InvocationContext } from '@azure/functions';

import { postBatch } from '../../../functions/ingest-http';
import type { PushdrainApp } from '../../../shared/app';

const quietContext = (): InvocationContext =>
  new InvocationContext({ functionName: 'postBatch', logHandler: () => {} });

export async function postNdjson(app: PushdrainApp, body: Buffer): Promise<string> {
  const req = new HttpRequest({
    method: 'POST',
    url: 'http://127.0.0.1:7071/api/batches',
    body: { bytes: body },
    headers: { 'content-type': 'application/x-ndjson', 'content-length': String(body.length) },
  });
  const res = await postBatch(app, req, quietContext());
  const answer = res.jsonBody as { batchId?: string } | undefined;
  if (res.status !== 202 || !answer?.batchId)
    throw new Error(`POST /api/batches answered ${res.status}: ${JSON.stringify(res.jsonBody)}`);
  return answer.batchId;
}
