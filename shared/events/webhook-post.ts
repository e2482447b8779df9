/**
 * One webhook attempt: POST the structured CloudEvent, signed per Standard Webhooks (`webhook-id`,
 * `webhook-timestamp`, `webhook-signature`, with the `standardwebhooks` package), to an address the
 * SSRF guard checked, within a hard timeout. Redirects are never followed (a 3xx is a failed
 * attempt): a redirect could lead anywhere, the guard's addresses included.
 */
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';

import { Webhook } from 'standardwebhooks';

import type { Secret } from '../config/event-settings';
import { ensureError } from '../errors';
import { type HostLookup, RefusedAddressError, resolveChecked } from './address-guard';
import { CLOUDEVENTS_CONTENT_TYPE } from './batch-event';
import type { AttemptResult } from './outbox';

/** Standard Webhooks' recommendation, and this design's promise: one attempt never takes longer. */
export const ATTEMPT_TIMEOUT_MS = 10_000;

/** Enough of an answer to log; the rest is read and dropped. */
const MAX_ANSWER_BYTES = 4096;

export interface SignedPost {
  url: string;
  eventId: string;
  body: string;
  secret: Secret;
  /** Skip the SSRF guard's refusal (an origin the operator allowlisted, or the operator's own webhook). */
  allowPrivate: boolean;
  timeoutMs?: number;
  now?: () => number;
  /** @defaultValue the system resolver */
  lookup?: HostLookup;
}

/** Standard Webhooks' three headers for `body`, signed at `at`. */
export function signatureHeaders(secret: Secret, eventId: string, body: string, at: Date): Record<string, string> {
  return {
    'webhook-id': eventId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(secret.reveal()).sign(eventId, at, body),
  };
}

/** Never throws: every failure is an AttemptResult with its reason (which names no secret and no query). */
export async function postSigned(p: SignedPost): Promise<AttemptResult> {
  const url = new URL(p.url);
  const timeoutMs = p.timeoutMs ?? ATTEMPT_TIMEOUT_MS;
  const deadline = AbortSignal.timeout(timeoutMs);
  try {
    const target = await resolveChecked(url.hostname, p.allowPrivate, p.lookup);
    const pinned: LookupFunction = (_host, options, callback) => {
      if ((options as { all?: boolean }).all)
        (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [target]);
      else callback(null, target.address, target.family);
    };
    const at = new Date((p.now ?? Date.now)());
    const body = Buffer.from(p.body, 'utf8');
    const headers = {
      'content-type': CLOUDEVENTS_CONTENT_TYPE,
      'content-length': String(body.length),
      'user-agent': 'pushdrain-webhooks/1',
      ...signatureHeaders(p.secret, p.eventId, p.body, at),
    };
    const send = url.protocol === 'https:' ? https.request : http.request;
    return await new Promise<AttemptResult>((resolve) => {
      const req = send(url, { method: 'POST', headers, lookup: pinned, signal: deadline, agent: false }, (res) => {
        let seen = 0;
        res.on('data', (chunk: Buffer) => {
          seen += chunk.length;
          if (seen > MAX_ANSWER_BYTES * 16) res.destroy();
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0 }));
        res.on('error', () => resolve({ status: res.statusCode ?? 0 }));
        res.on('close', () => resolve({ status: res.statusCode ?? 0 }));
      });
      req.on('error', (e) =>
        resolve({
          error: deadline.aborted ? `no answer within ${timeoutMs} ms` : `${url.host}: ${networkReason(e)}`,
        }),
      );
      req.end(body);
    });
  } catch (e) {
    if (e instanceof RefusedAddressError) return { error: `refused: ${e.message}` };
    return { error: `${url.host}: ${networkReason(ensureError(e))}` };
  }
}

function networkReason(e: Error): string {
  const code = (e as { code?: unknown }).code;
  return typeof code === 'string' ? code : e.message.slice(0, 200);
}
