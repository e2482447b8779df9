/**
 * `pushdrain callbacks verify`: checks a callback a receiver got (its body, and its headers as a
 * JSON object) the way README's receiver does, against the app's published keys (GET
 * /api/events/keys) and the receiver's own id. Exit 3 when a check fails, naming it, so a client
 * can test its receiver's inputs, or a captured request, from a script.
 */
import { readFileSync } from 'node:fs';

import { type Me, verifyCallback } from './callback-verifier';
import type { Ctx } from './commands';
import { EXIT } from './exit-codes';

export interface VerifyOptions {
  /** The request's headers: a JSON object (`webhook-id`, `webhook-timestamp`, `webhook-signature`). */
  headers: string;
  me: Me;
}

export async function callbacksVerify(ctx: Ctx, bodyFile: string, o: VerifyOptions): Promise<number> {
  const body = readFileSync(bodyFile === '-' ? 0 : bodyFile, 'utf8');
  const headers = JSON.parse(readFileSync(o.headers, 'utf8')) as Record<string, string>;
  const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  const { keys } = await ctx.client.json<{ keys: { whpk: string }[] }>('callbacks verify', '/api/events/keys');
  let event: { id?: string; type?: string; subject?: string };
  try {
    event = verifyCallback(
      body,
      lower,
      keys.map((k) => k.whpk),
      o.me,
    ) as typeof event;
  } catch (e) {
    if (ctx.json) console.log(JSON.stringify({ verified: false, reason: (e as Error).message }));
    else console.error(`not verified: ${(e as Error).message}`);
    return EXIT.rejected;
  }
  if (ctx.json) console.log(JSON.stringify({ verified: true, id: event.id, type: event.type, subject: event.subject }));
  else console.log(`verified: ${event.type ?? ''} ${event.subject ?? ''} (${event.id ?? ''}), addressed to you`);
  return EXIT.ok;
}
