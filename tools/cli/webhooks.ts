/**
 * `pushdrain webhooks test`: asks the app to send one signed test event to each of its webhooks
 * (`POST /api/ops/webhooks/test`, admin key) and prints what each answered. Exit 4 when any target
 * did not answer 2xx, so a script can check a receiver after a deploy or a secret rotation.
 */
import type { TestEventResult } from '../../shared/events/test-event';
import type { Ctx } from './commands';
import { EXIT } from './exit-codes';
import { duration, table } from './output';

export async function webhooksTest(ctx: Ctx): Promise<number> {
  const r = await ctx.client.postJson<TestEventResult>('webhooks test', '/api/ops/webhooks/test', {}, ctx.adminKey);
  if (ctx.json) console.log(JSON.stringify(r, null, 2));
  else {
    console.log(`test event ${r.eventId} (${r.type}) sent to ${r.targets.length} webhook(s):`);
    console.log(
      table(
        ['target', 'result', 'status', 'time', 'error'],
        r.targets.map((t) => [
          t.target,
          t.ok ? ctx.paint('green', 'ok') : ctx.paint('red', 'failed'),
          t.status !== undefined ? String(t.status) : '–',
          duration(t.ms),
          t.error ?? '',
        ]),
        [2, 3],
      ),
    );
    if (r.failed > 0) console.log(ctx.paint('red', `${r.failed} of ${r.targets.length} webhook(s) did not answer 2xx`));
  }
  return r.failed > 0 ? EXIT.failed : EXIT.ok;
}
