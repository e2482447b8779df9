/**
 * A client's verification of a callback, as README's receiver sample writes it: the CLI's
 * (tools/cli/callback-verifier.ts, `pushdrain callbacks verify`), so the tests' receivers check
 * exactly what a client is told to: the signature, the timestamp, and that the event is its own.
 */
export { type Me, verifyCallback } from '../../tools/cli/callback-verifier';

/** The `whpk_` keys the host publishes for callbacks (anonymous GET /api/events/keys). */
export async function callbackKeys(base: string): Promise<string[]> {
  const res = await fetch(`${base}/api/events/keys`);
  if (res.status !== 200) throw new Error(`GET /api/events/keys: ${res.status}`);
  return ((await res.json()) as { keys: { whpk: string }[] }).keys.map((k) => k.whpk);
}
