/**
 * What a client team writes with a client generated from the OpenAPI document (openapi-typescript's
 * types in openapi-types.ts, openapi-fetch's client): submit a batch, wait for it, read its report.
 * It compiles with the rest of the tests, so a document change that breaks a client breaks the build;
 * test/http/openapi-client.test.ts checks that openapi-types.ts is what the document generates today.
 */
import createClient from 'openapi-fetch';

import type { components, paths } from './openapi-types';

export type Transaction = components['schemas']['Transaction'];
export type Report = components['schemas']['Report'];

export interface ExampleOptions {
  baseUrl: string;
  /** A function key (`x-functions-key`); a token would go in `Authorization: Bearer …` instead. */
  functionKey: string;
  idempotencyKey?: string;
  /** How long to wait for the batch to complete. @defaultValue 60000 */
  timeoutMs?: number;
}

export async function submitAndReadReport(transactions: Transaction[], options: ExampleOptions): Promise<Report> {
  const client = createClient<paths>({ baseUrl: options.baseUrl, headers: { 'x-functions-key': options.functionKey } });
  const submitted = await client.POST('/api/batches', {
    body: transactions,
    params: { header: options.idempotencyKey ? { 'Idempotency-Key': options.idempotencyKey } : {} },
  });
  if (!submitted.data) {
    const refusal = submitted.error;
    const details = refusal && 'details' in refusal ? (refusal.details ?? []) : [];
    throw new Error(
      `the batch was refused: ${refusal?.error ?? submitted.response.status} ${details.length} detail(s)`,
    );
  }
  const { batchId } = submitted.data;
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  while (Date.now() < deadline) {
    const got = await client.GET('/api/batches/{batchId}/report', {
      params: { path: { batchId }, query: { format: 'json' } },
    });
    // The route answers JSON or CSV: the type is their union until the client narrows it.
    if (typeof got.data === 'object') return got.data;
    // 409 not_ready carries the batch's status: a failed batch has no report to wait for.
    const error = got.error;
    if (!error || !('status' in error) || error.status === 'failed')
      throw new Error(`batch ${batchId}: no report (${got.response.status})`);
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`batch ${batchId} did not complete in time`);
}
