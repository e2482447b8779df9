/**
 * One webhook attempt: POST the structured CloudEvent, signed per Standard Webhooks (`webhook-id`,
 * `webhook-timestamp`, `webhook-signature`: `v1` with the `standardwebhooks` package for the
 * operator's webhooks, `v1a` ed25519 for a client's callback), to an address the SSRF guard checked,
 * within a hard timeout that includes the lookup. Redirects are never followed (a 3xx is a failed
 * attempt): a redirect could lead anywhere, the guard's addresses included. With an IP literal
 * (a loopback receiver, say) there is no lookup, and with an open kept connection
 * (endpoint-agents.ts) the request is written in the very turn of the event loop that started it.
 */
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';

import { Webhook } from 'standardwebhooks';

import type { Secret } from '../config/event-settings';
import { ensureError } from '../errors';
import {
  checkedLiteral,
  type HostLookup,
  RefusedAddressError,
  resolveChecked,
  type ResolvedAddress,
} from './address-guard';
import { CLOUDEVENTS_CONTENT_TYPE } from './batch-event';
import { CallbackSigner } from './callback-signer';
import type { EndpointAgents } from './endpoint-agents';
import type { AttemptResult } from './outbox';

/** Standard Webhooks' recommendation, and this design's promise: one attempt never takes longer. */
const ATTEMPT_TIMEOUT_MS = 10_000;

/** Enough of an answer to log; the rest is read and dropped. */
const MAX_ANSWER_BYTES = 4096;

export interface SignedPost {
  url: string;
  eventId: string;
  body: string;
  /** The operator's webhook secret (`v1`, HMAC), or a client's callback signer (`v1a`, ed25519). */
  secret: Secret | CallbackSigner;
  /** Skip the SSRF guard's refusal (an origin the operator allowlisted, or the operator's own webhook). */
  allowPrivate: boolean;
  timeoutMs?: number;
  now?: () => number;
  /** @defaultValue the system resolver */
  lookup?: HostLookup;
  /** Kept connections per endpoint and checked address. @defaultValue a new connection per attempt */
  agents?: EndpointAgents;
}

/** Standard Webhooks' three headers for `body`, signed at `at`. */
export function signatureHeaders(
  secret: Secret | CallbackSigner,
  eventId: string,
  body: string,
  at: Date,
): Record<string, string> {
  return {
    'webhook-id': eventId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature':
      secret instanceof CallbackSigner
        ? secret.signature(eventId, at, body)
        : new Webhook(secret.reveal()).sign(eventId, at, body),
  };
}

/** Never throws: every failure is an AttemptResult with its reason (which names no secret and no query). */
export function postSigned(p: SignedPost): Promise<AttemptResult> {
  let url: URL;
  try {
    url = new URL(p.url);
  } catch {
    return Promise.resolve({ error: 'not a valid URL' });
  }
  const timeoutMs = p.timeoutMs ?? ATTEMPT_TIMEOUT_MS;
  const deadline = AbortSignal.timeout(timeoutMs);
  try {
    // An IP literal needs no lookup: no await between here and the request's write.
    const literal = checkedLiteral(url.hostname, p.allowPrivate);
    if (literal) return send(p, { url, target: literal, deadline, timeoutMs });
    return beforeDeadline(resolveChecked(url.hostname, p.allowPrivate, p.lookup), deadline).then(
      (target) => send(p, { url, target, deadline, timeoutMs }),
      (e: unknown) =>
        deadline.aborted && !(e instanceof RefusedAddressError)
          ? { error: `no answer within ${timeoutMs} ms (name resolution)` }
          : failure(url, e),
    );
  } catch (e) {
    return Promise.resolve(failure(url, e));
  }
}

/** `p`, or a rejection when `deadline` fires first: the lookup is part of the attempt's time. */
function beforeDeadline<T>(p: Promise<T>, deadline: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(new Error('deadline'));
    if (deadline.aborted) onAbort();
    deadline.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        deadline.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        deadline.removeEventListener('abort', onAbort);
        reject(e instanceof Error ? e : ensureError(e));
      },
    );
  });
}

function failure(url: URL, e: unknown): AttemptResult {
  if (e instanceof RefusedAddressError) return { error: `refused: ${e.message}` };
  return { error: `${url.host}: ${networkReason(ensureError(e))}` };
}

/** A kept connection that the receiver closed as it was reused: the request never reached the receiver. */
const STALE_CONNECTION = new Set(['ECONNRESET', 'EPIPE']);

/** Where one request goes: the URL, the address the guard checked for it, and its time bounds. */
interface Route {
  url: URL;
  target: ResolvedAddress;
  deadline: AbortSignal;
  timeoutMs: number;
}

function send(p: SignedPost, { url, target, deadline, timeoutMs }: Route): Promise<AttemptResult> {
  // Connect to the address the guard checked, whatever a second lookup would say.
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
  const request = url.protocol === 'https:' ? https.request : http.request;
  const agent = p.agents ? p.agents.for(url, target) : false;
  const once = (mayResend: boolean): Promise<AttemptResult> =>
    new Promise<AttemptResult>((resolve) => {
      let answered = false;
      const req = request(url, { method: 'POST', headers, lookup: pinned, signal: deadline, agent }, (res) => {
        answered = true;
        let seen = 0;
        res.on('data', (chunk: Buffer) => {
          seen += chunk.length;
          if (seen > MAX_ANSWER_BYTES * 16) res.destroy();
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0 }));
        res.on('error', () => resolve({ status: res.statusCode ?? 0 }));
        res.on('close', () => resolve({ status: res.statusCode ?? 0 }));
      });
      req.on('error', (e) => {
        // Node's documented remedy for a reused connection that was closed under it: send once more, on a new one.
        const code = (e as { code?: unknown }).code;
        const kept = req.reusedSocket || p.agents?.wasWarmed(req.socket) === true;
        if (mayResend && !answered && kept && !deadline.aborted && STALE_CONNECTION.has(String(code))) {
          resolve(once(false));
          return;
        }
        resolve({
          error: deadline.aborted ? `no answer within ${timeoutMs} ms` : `${url.host}: ${networkReason(e)}`,
        });
      });
      req.end(body);
    });
  return once(true);
}

function networkReason(e: Error): string {
  const code = (e as { code?: unknown }).code;
  return typeof code === 'string' ? code : e.message.slice(0, 200);
}
