/** Child-process entry: receives one job over IPC, runs it, answers over IPC, exits. */
import { ensureError } from '../../shared/errors';
import { type Job, runJob } from './jobs';

process.once('message', (job: Job) => {
  runJob(job).then(
    (value) => process.send?.({ ok: true, value }, () => process.exit(0)),
    (e: unknown) => {
      const err = ensureError(e);
      process.send?.({ ok: false, error: err.stack ?? err.message }, () => process.exit(1));
    },
  );
});
