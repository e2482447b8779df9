/**
 * Timer (schedule from PUSHDRAIN_SWEEP_SCHEDULE): recover open batches whose events were lost
 * or that stalled, then ingest batch files dropped in `incoming/`. Two list requests per idle run.
 */
import { app, type InvocationContext } from '@azure/functions';

import type { PushdrainApp } from '../shared/app';
import type { SweepOutcome } from '../shared/sweep/incoming-sweep';
import { pushdrainApp } from './pushdrain-app';

export async function ingestSweep(app: PushdrainApp, context: InvocationContext): Promise<SweepOutcome[]> {
  const { recovered, files } = await app.sweep();
  const acted = recovered.filter((a) => a.kind !== 'progressing' && a.kind !== 'claimed');
  if (acted.length > 0) context.log(`recovery: ${acted.map((a) => `${a.batchId}=${a.kind}`).join(', ')}`);
  if (files.length > 0) context.log(`incoming sweep: ${files.map((o) => `${o.name}=${o.kind}`).join(', ')}`);
  return files;
}

app.timer('ingestSweep', {
  schedule: '%PUSHDRAIN_SWEEP_SCHEDULE%',
  handler: async (_timer, context) => {
    await ingestSweep(pushdrainApp(), context);
  },
});
