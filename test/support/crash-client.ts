/**
 * The client side of a crash soak: batches submitted with an Idempotency-Key and, when a kill
 * cut the request, submitted again with the same key until the `202` (as a real client would);
 * a watcher that records when each accepted batch completed. Every loop is bounded.
 */
import assert from 'node:assert/strict';

import type { Transaction } from '../../shared/model/transaction';
import { toNdjson } from '../../tools/testkit/generate';
import type { HostProcess } from './host-process';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export interface BatchStatus {
  status: string;
  chunks: number;
  chunksDone: number;
  chunksFailed: number;
  error?: string;
}

export class SoakBatch {
  readonly body: Buffer;
  batchId?: string;
  chunks?: number;
  /** When the `202` arrived. */
  acceptedAt?: number;
  completedAt?: number;
  /** `409 ingest_in_progress` answers: the kill came after the request had claimed the batch. */
  inProgressAnswers = 0;
  private retrying?: Promise<void>;

  constructor(
    readonly key: string,
    readonly txns: Transaction[],
    /** When the first attempt started. */
    readonly submittedAt = Date.now(),
  ) {
    this.body = toNdjson(txns);
  }

  /** Reads a response; true on `202`. Anything but a `202`, a `409` in progress or a `5xx` fails the test. */
  async take(res: Response): Promise<boolean> {
    const text = await res.text();
    if (res.status === 202) {
      const body = JSON.parse(text) as { batchId: string; chunks: number; transactions: number };
      assert.equal(body.transactions, this.txns.length, `${this.key}: transactions in the 202`);
      this.batchId = body.batchId;
      this.chunks = body.chunks;
      this.acceptedAt ??= Date.now();
      return true;
    }
    if (res.status === 409 && text.includes('ingest_in_progress')) this.inProgressAnswers++;
    else assert.ok(res.status >= 500, `${this.key}: unexpected answer ${res.status} ${text}`);
    return false;
  }

  /** One POST of the whole body; resolves with the response, or the network error a kill causes. */
  post(host: HostProcess, body: Buffer | ReadableStream<Uint8Array> = this.body): Promise<Response | Error> {
    return fetch(`${host.base}/api/batches`, {
      method: 'POST',
      body,
      headers: { 'Content-Type': 'application/x-ndjson', 'Idempotency-Key': this.key },
      signal: AbortSignal.timeout(60_000),
      ...(body instanceof ReadableStream ? { duplex: 'half' as const } : {}),
    }).then(
      (r) => r,
      (e: unknown) => e as Error,
    );
  }

  /** Submits again with the same key until the `202` (background; `accepted()` awaits it). */
  resubmit(host: HostProcess, timeoutMs = 150_000): void {
    this.retrying ??= (async () => {
      const deadline = Date.now() + timeoutMs;
      let last = '';
      for (let i = 0; i < 1000 && Date.now() < deadline; i++) {
        const res = await this.post(host);
        if (res instanceof Error) last = res.message;
        else if (await this.take(res)) return;
        else last = `status ${res.status}`;
        const retryAfter = res instanceof Error ? 0 : Number(res.headers.get('retry-after') ?? 0);
        await sleep(Math.max(300, retryAfter * 1000));
      }
      throw new Error(`${this.key} was never accepted: ${last}`);
    })();
  }

  /** Resolves once the batch was answered `202` (now or by a resubmission). */
  async accepted(): Promise<void> {
    await this.retrying;
    assert.ok(this.batchId, `${this.key}: never submitted again after its request was cut`);
  }
}

/** GET the status; undefined while the host is down. */
export async function statusOf(host: HostProcess, batchId: string): Promise<BatchStatus | undefined> {
  try {
    const res = await fetch(`${host.base}/api/batches/${batchId}`, { signal: AbortSignal.timeout(10_000) });
    if (res.status !== 200) {
      await res.body?.cancel();
      return undefined;
    }
    return (await res.json()) as BatchStatus;
  } catch {
    return undefined;
  }
}

/** A stream that hands the body over in pieces with pauses, so a kill can land while it is in flight. */
export function slowBody(
  body: Buffer,
  onSent: (bytes: number) => void,
  pieceBytes = 64 * 1024,
  pauseMs = 8,
): ReadableStream<Uint8Array> {
  let offset = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (offset >= body.length) return controller.close();
      if (offset > 0) await sleep(pauseMs);
      const piece = body.subarray(offset, offset + pieceBytes);
      offset += piece.length;
      controller.enqueue(new Uint8Array(piece));
      onSent(offset);
    },
  });
}

/**
 * Polls every accepted, unfinished batch and records when it completed. A `failed` batch
 * fails the test. stop() ends the loop.
 */
export function watchCompletions(
  host: HostProcess,
  batches: () => readonly SoakBatch[],
  everyMs = 200,
): { stop(): Promise<void>; failures: string[] } {
  let running = true;
  const failures: string[] = [];
  const loop = (async () => {
    for (let i = 0; running && i < 100_000; i++) {
      for (const b of batches()) {
        if (!b.batchId || b.completedAt !== undefined) continue;
        const s = await statusOf(host, b.batchId);
        if (s?.status === 'completed') b.completedAt = Date.now();
        if (s?.status === 'failed') failures.push(`${b.batchId}: ${s.error ?? 'failed'}`);
      }
      await sleep(everyMs);
    }
  })();
  return {
    failures,
    stop: async () => {
      running = false;
      await loop;
    },
  };
}
