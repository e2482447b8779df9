/**
 * A webhook receiver written the way README tells a user to write one: an HTTP server on
 * 127.0.0.1 that verifies each request (the operator's webhook with the `standardwebhooks` library
 * and its `whsec_` secret; a client's callback with the `whpk_` public keys, callback-verifier.ts)
 * and dedupes on `webhook-id`. Tests script its answers (a status, or `hang`: never answer) and read what it got.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

import { Webhook } from 'standardwebhooks';

import { type Me, verifyCallback } from './callback-verifier';

export interface ReceivedEvent {
  webhookId: string;
  /** The verified CloudEvent. */
  event: { id: string; type: string; subject: string; time: string; data: Record<string, unknown> };
  contentType: string;
  at: number;
  /** The request as it came (a test replays it elsewhere). */
  raw: { body: string; headers: Record<string, string> };
}

type Answer = number | 'hang';

export interface WebhookReceiver {
  readonly url: string;
  /** Every request that verified, in order of arrival, duplicates included. */
  readonly requests: ReceivedEvent[];
  /** Every verified request with the answer it got, whatever it was. */
  readonly attempts: { webhookId: string; answer: Answer; at: number }[];
  /** Requests that failed verification (must stay 0). */
  readonly unverified: number;
  /** One entry per distinct webhook-id: what a deduping receiver processes. */
  distinct(): Map<string, ReceivedEvent>;
  /** The next answers, in order; after them, `fallback`. */
  script(answers: Answer[], fallback?: Answer): void;
  /** Answers every request held by `hang` with this status now. */
  release(status?: number): void;
  close(): Promise<void>;
}

/**
 * A `whsec_` secret (an operator's webhook), or the `whpk_` keys a client trusts (read at each
 * request) and who that client is (an event naming anyone else is refused).
 */
export type Verification = string | { publicKeys: () => readonly string[]; me: Me };

export async function startWebhookReceiver(
  verification: Verification,
  path = '/hooks/pushdrain',
): Promise<WebhookReceiver> {
  const wh = typeof verification === 'string' ? new Webhook(verification) : undefined;
  const check = (body: string, headers: IncomingMessage['headers']): unknown =>
    wh
      ? wh.verify(body, headers as Record<string, string>)
      : verifyCallback(
          body,
          headers,
          (verification as Exclude<Verification, string>).publicKeys(),
          (verification as Exclude<Verification, string>).me,
        );
  const requests: ReceivedEvent[] = [];
  const attempts: WebhookReceiver['attempts'] = [];
  const held = new Set<ServerResponse>();
  let unverified = 0;
  let answers: Answer[] = [];
  let fallback: Answer = 200;
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const answer = answers.shift() ?? fallback;
      let event: ReceivedEvent['event'];
      try {
        event = check(body, req.headers) as ReceivedEvent['event'];
      } catch {
        unverified++;
        res.writeHead(400).end();
        return;
      }
      const record: ReceivedEvent = {
        webhookId: String(req.headers['webhook-id']),
        event,
        contentType: String(req.headers['content-type']),
        at: Date.now(),
        raw: { body, headers: req.headers as Record<string, string> },
      };
      attempts.push({ webhookId: record.webhookId, answer, at: record.at });
      if (answer === 'hang') {
        held.add(res);
        res.on('close', () => held.delete(res));
        return;
      }
      // Only an answered 2xx counts as received: a 503 or a hung request is not delivered.
      if (answer >= 200 && answer < 300) requests.push(record);
      res.writeHead(answer).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${path}`,
    requests,
    attempts,
    get unverified() {
      return unverified;
    },
    distinct: () => new Map(requests.map((r) => [r.webhookId, r])),
    script: (next, fb = 200) => {
      answers = [...next];
      fallback = fb;
    },
    release: (status = 200) => {
      for (const res of held) res.writeHead(status).end();
      held.clear();
    },
    close: async () => {
      for (const res of held) res.destroy();
      held.clear();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
