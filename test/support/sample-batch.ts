/** A small valid batch (one account, EUR charges) for the tests that are about who sees it, not what it bills. */
import assert from 'node:assert/strict';

/** NDJSON of one 100-cent EUR charge per id. */
export function sampleBatch(ids: readonly string[]): string {
  return ids
    .map((id) =>
      JSON.stringify({
        id,
        account: 'a1',
        timestamp: '2026-03-01T10:00:00Z',
        type: 'charge',
        amount: 100,
        currency: 'EUR',
      }),
    )
    .join('\n');
}

/** POSTs a two-transaction sample batch with a bearer token; the batch id of its 202. */
export async function submitSample(base: string, token: string): Promise<string> {
  const res = await fetch(`${base}/api/batches`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-ndjson', Authorization: `Bearer ${token}` },
    body: sampleBatch(['t1', 't2']),
  });
  const text = await res.text();
  assert.equal(res.status, 202, text);
  return (JSON.parse(text) as { batchId: string }).batchId;
}
