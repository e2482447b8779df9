/** Timer: sweep `incoming/` for dropped batch files (schedule from PUSHDRAIN_SWEEP_SCHEDULE). */
import { app, type InvocationContext } from '@azure/functions';

import type { Runtime } from '../shared/runtime';
import { sweepIncoming, type SweepOutcome } from '../shared/sweep/incoming-sweep';
import { runtime } from './runtime';

export async function ingestSweep(rt: Runtime, context: InvocationContext): Promise<SweepOutcome[]> {
  await rt.ensureStorage();
  const outcomes = await sweepIncoming(rt.ctx);
  if (outcomes.length > 0) context.log(`incoming sweep: ${outcomes.map((o) => `${o.name}=${o.kind}`).join(', ')}`);
  return outcomes;
}

app.timer('ingestSweep', {
  schedule: '%PUSHDRAIN_SWEEP_SCHEDULE%',
  handler: async (_timer, context) => {
    await ingestSweep(runtime(), context);
  },
});
