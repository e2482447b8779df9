/**
 * Timer (schedule from PUSHDRAIN_SWEEP_SCHEDULE): re-notify batches whose events could not be
 * published at ingest, then ingest batch files dropped in `incoming/`. Two list requests per run.
 */
import { app, type InvocationContext } from '@azure/functions';

import type { PushdrainApp } from '../shared/app';
import type { SweepOutcome } from '../shared/sweep/incoming-sweep';
import { instance } from './instance';

export async function ingestSweep(rt: PushdrainApp, context: InvocationContext): Promise<SweepOutcome[]> {
  const { renotified, files } = await rt.sweep();
  for (const r of renotified) context.log(`batch ${r.batchId}: pending notification ${r.ok ? 're-published' : `still failing: ${r.error ?? ''}`}`);
  if (files.length > 0) context.log(`incoming sweep: ${files.map((o) => `${o.name}=${o.kind}`).join(', ')}`);
  return files;
}

app.timer('ingestSweep', {
  schedule: '%PUSHDRAIN_SWEEP_SCHEDULE%',
  handler: async (_timer, context) => {
    await ingestSweep(instance(), context);
  },
});
