/**
 * A loopback HTTP proxy in front of Azurite's blob and queue endpoints that injects the
 * failures Azure Storage really produces, at the wire, under the unmodified SDK:
 *
 * - `status503` / `status500`: answer ServerBusy / InternalError without forwarding;
 * - `reset`: reset the connection before forwarding (the client sees ECONNRESET);
 * - `stall`: hold the request and never answer, until the client gives up, `close()`, or
 *   `stallMaxMs` (bounded, so a test can never hang on it);
 * - `dropAfterApply`: forward, let Azurite apply it, then drop the response: a write that
 *   succeeded whose client saw a failure (its retry duplicates it; idempotency must absorb it).
 *
 * Faults are scripted (`inject`: the next N requests that match, after skipping some) or drawn
 * from a seeded random source (`chaos`: a probability per kind). Scripted rules win. Every
 * injection is counted by kind (`counts()`), for assertions and closing notes.
 */
import { randomUUID } from 'node:crypto';
import {
  Agent,
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  request as httpRequest,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

import { rng } from './generate';

export const FAULT_KINDS = ['status503', 'status500', 'reset', 'stall', 'dropAfterApply'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];
export type StorageService = 'blob' | 'queue';

/** What a rule sees of a request. `path` is the full path, account segment included (`/devstoreaccount1/c/b`). */
export interface ProxiedRequest {
  service: StorageService;
  method: string;
  path: string;
  query: URLSearchParams;
}

interface RequestMatch {
  service?: StorageService;
  /** One method or several, upper case. */
  method?: string | readonly string[];
  /** Tested against the full path, e.g. `/\/messages$/` for a queue's message operations. */
  path?: RegExp;
  /** A pattern for the raw query string, or parameters that must be present (`true`) or equal. */
  query?: RegExp | Readonly<Record<string, string | true>>;
}

export type Matcher = RequestMatch | ((request: ProxiedRequest) => boolean);

export interface InjectOptions {
  /** Matching requests to fault. @defaultValue 1 */
  times?: number;
  /** Matching requests to let through first. @defaultValue 0 */
  skip?: number;
  /** Which requests count as matching. @defaultValue every request */
  match?: Matcher;
}

/** A scripted fault; `remaining` reaches 0 when it is spent. */
export interface ScriptedFault {
  readonly kind: FaultKind;
  readonly remaining: number;
  /** Requests it has faulted so far. */
  readonly hits: number;
}

export interface ChaosOptions {
  seed: number;
  /** Probability per request of each kind; the sum must not exceed 1. */
  rates: Partial<Record<FaultKind, number>>;
  /** Only these requests are eligible. @defaultValue every request */
  match?: Matcher;
}

export interface ProxyCounts {
  /** Requests the proxy received. */
  requests: number;
  /** Requests passed on to Azurite (dropAfterApply included: Azurite applied those). */
  forwarded: number;
  injected: Record<FaultKind, number>;
}

export interface InjectedFault {
  kind: FaultKind;
  service: StorageService;
  method: string;
  path: string;
}

export interface StorageProxyOptions {
  /** A stalled request is dropped after this long at the latest. @defaultValue 30000 */
  stallMaxMs?: number;
}

export interface UpstreamPorts {
  blobPort: number;
  queuePort: number;
}

const ERROR_BODY: Record<'status503' | 'status500', { status: number; code: string; message: string }> = {
  status503: { status: 503, code: 'ServerBusy', message: 'The server is busy.' },
  status500: {
    status: 500,
    code: 'InternalError',
    message: 'The server encountered an internal error. Please retry the request.',
  },
};

/** Connection-level headers a proxy must not pass on. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'upgrade']);

/** Kept so a test can say which requests were hit; capped so a long chaos run stays small. */
const HISTORY_CAP = 1000;

function matches(m: Matcher | undefined, r: ProxiedRequest): boolean {
  if (!m) return true;
  if (typeof m === 'function') return m(r);
  if (m.service && m.service !== r.service) return false;
  if (m.method !== undefined) {
    const methods = typeof m.method === 'string' ? [m.method] : m.method;
    if (!methods.some((x) => x.toUpperCase() === r.method)) return false;
  }
  if (m.path && !m.path.test(r.path)) return false;
  if (m.query instanceof RegExp) return m.query.test(r.query.toString());
  if (m.query) {
    for (const [k, v] of Object.entries(m.query)) {
      const got = r.query.get(k);
      if (got === null || (v !== true && got !== v)) return false;
    }
  }
  return true;
}

class Rule implements ScriptedFault {
  hits = 0;
  private skipped = 0;
  constructor(
    readonly kind: FaultKind,
    private readonly times: number,
    private readonly skip: number,
    private readonly match: Matcher | undefined,
  ) {}

  get remaining(): number {
    return this.times - this.hits;
  }

  /** True when this request is one this rule faults (and counts it). */
  take(r: ProxiedRequest): boolean {
    if (this.remaining <= 0 || !matches(this.match, r)) return false;
    if (this.skipped < this.skip) {
      this.skipped++;
      return false;
    }
    this.hits++;
    return true;
  }
}

/** Rewrites a connection string's BlobEndpoint and QueueEndpoint to the given ports on 127.0.0.1, keeping the account path. */
export function proxiedConnectionString(connectionString: string, ports: Partial<UpstreamPorts>): string {
  const endpoints: [string, number | undefined][] = [
    ['blobendpoint', ports.blobPort],
    ['queueendpoint', ports.queuePort],
  ];
  let seen = 0;
  const out = connectionString
    .split(';')
    .filter((s) => s.trim() !== '')
    .map((segment) => {
      const eq = segment.indexOf('=');
      const key = segment.slice(0, eq).trim();
      const port = endpoints.find(([k]) => k === key.toLowerCase())?.[1];
      if (eq <= 0 || port === undefined) return segment;
      seen++;
      const url = new URL(segment.slice(eq + 1).trim());
      url.hostname = '127.0.0.1';
      url.port = String(port);
      return `${key}=${url.toString().replace(/\/$/, '')}`;
    });
  const wanted = endpoints.filter(([, p]) => p !== undefined).length;
  if (seen !== wanted)
    throw new Error(
      'proxiedConnectionString: the connection string must name BlobEndpoint and QueueEndpoint explicitly',
    );
  return `${out.join(';')};`;
}

export class StorageProxy {
  private readonly servers: Server[] = [];
  private readonly sockets = new Set<Socket>();
  private readonly held = new Map<Socket, NodeJS.Timeout>();
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 64 });
  private rules: Rule[] = [];
  private chaosState: { random: () => number; rates: [FaultKind, number][]; match: Matcher | undefined } | undefined;
  private readonly tally: ProxyCounts = StorageProxy.zero();
  private readonly log: InjectedFault[] = [];
  private closed: Promise<void> | undefined;
  blobPort = 0;
  queuePort = 0;

  private constructor(
    private readonly upstream: UpstreamPorts,
    private readonly stallMaxMs: number,
  ) {}

  /** Listens on two free loopback ports, one per service, forwarding to Azurite's. */
  static async start(upstream: UpstreamPorts, options: StorageProxyOptions = {}): Promise<StorageProxy> {
    const proxy = new StorageProxy(upstream, options.stallMaxMs ?? 30_000);
    proxy.blobPort = await proxy.listen('blob');
    proxy.queuePort = await proxy.listen('queue');
    return proxy;
  }

  private static zero(): ProxyCounts {
    return {
      requests: 0,
      forwarded: 0,
      injected: Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>,
    };
  }

  /** The same connection string, with both endpoints pointing at this proxy. */
  connectionString(original: string): string {
    return proxiedConnectionString(original, { blobPort: this.blobPort, queuePort: this.queuePort });
  }

  /** Faults the next `times` matching requests (after `skip`) with `kind`. */
  inject(kind: FaultKind, options: InjectOptions = {}): ScriptedFault {
    const times = options.times ?? 1;
    if (!(times >= 0) || !(options.skip === undefined || options.skip >= 0))
      throw new Error('inject: times and skip must be non-negative');
    const rule = new Rule(kind, times, options.skip ?? 0, options.match);
    this.rules.push(rule);
    return rule;
  }

  /** Seeded random faults on eligible requests; replaces any previous chaos setting. */
  chaos(options: ChaosOptions): void {
    const rates = FAULT_KINDS.map((k): [FaultKind, number] => [k, options.rates[k] ?? 0]).filter(([, p]) => p > 0);
    const sum = rates.reduce((a, [, p]) => a + p, 0);
    if (rates.some(([, p]) => !(p <= 1)) || sum > 1)
      throw new Error(`chaos: rates must be probabilities summing to at most 1 (got ${sum})`);
    this.chaosState = { random: rng(options.seed), rates, match: options.match };
  }

  /** Disarms every scripted rule and the chaos mode; counts are kept. */
  clear(): void {
    this.rules = [];
    this.chaosState = undefined;
  }

  counts(): ProxyCounts {
    return { ...this.tally, injected: { ...this.tally.injected } };
  }

  /** The faults injected so far, oldest first (the last 1000). */
  injectedFaults(): readonly InjectedFault[] {
    return [...this.log];
  }

  /** Requests being held by a stall right now. */
  get stalled(): number {
    return this.held.size;
  }

  /** Ends every held request and open connection, then stops listening. Idempotent. */
  close(): Promise<void> {
    this.closed ??= (async () => {
      this.clear();
      for (const t of this.held.values()) clearTimeout(t);
      this.held.clear();
      for (const s of this.sockets) s.destroy();
      this.sockets.clear();
      await Promise.all(
        this.servers.map(
          (server) =>
            new Promise<void>((resolve) => {
              server.close(() => resolve());
              server.closeAllConnections();
            }),
        ),
      );
      this.agent.destroy();
    })();
    return this.closed;
  }

  private listen(service: StorageService): Promise<number> {
    const server = createServer((req, res) => this.handle(service, req, res));
    // Never the first to close an idle keep-alive connection: a reused one closed under the client
    // is a reset and a retried attempt that the client's meter counts and this proxy never saw.
    server.keepAliveTimeout = 0;
    server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    // A client's broken request must not crash the test process.
    server.on('clientError', (_e, socket: Socket) => socket.destroy());
    this.servers.push(server);
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
    });
  }

  private decide(r: ProxiedRequest): FaultKind | undefined {
    for (const rule of this.rules) if (rule.take(r)) return rule.kind;
    const chaos = this.chaosState;
    if (!chaos || !matches(chaos.match, r)) return undefined;
    // One draw per eligible request, so a seed replays the same faults for the same request sequence.
    let x = chaos.random();
    for (const [kind, p] of chaos.rates) {
      if (x < p) return kind;
      x -= p;
    }
    return undefined;
  }

  private handle(service: StorageService, req: IncomingMessage, res: ServerResponse): void {
    if (this.closed) {
      req.socket.destroy();
      return;
    }
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const method = (req.method ?? 'GET').toUpperCase();
    const info: ProxiedRequest = { service, method, path: url.pathname, query: url.searchParams };
    this.tally.requests++;
    const kind = this.decide(info);
    if (kind) {
      this.tally.injected[kind]++;
      this.log.push({ kind, service, method, path: url.pathname });
      if (this.log.length > HISTORY_CAP) this.log.shift();
    }
    switch (kind) {
      case 'status503':
      case 'status500':
        return this.answerError(req, res, kind);
      case 'reset':
        req.socket.resetAndDestroy();
        return;
      case 'stall':
        return this.hold(req);
      default:
        return this.forward(service, req, res, kind === 'dropAfterApply');
    }
  }

  private answerError(req: IncomingMessage, res: ServerResponse, kind: 'status503' | 'status500'): void {
    const { status, code, message } = ERROR_BODY[kind];
    const requestId = randomUUID();
    const body = `<?xml version="1.0" encoding="utf-8"?><Error><Code>${code}</Code><Message>${message}\nRequestId:${requestId}\nTime:${new Date().toISOString()}</Message></Error>`;
    // Read the request body first so the keep-alive connection stays usable for the retry.
    req.resume();
    req.once('end', () => {
      res.writeHead(status, {
        'Content-Type': 'application/xml',
        'Content-Length': req.method === 'HEAD' ? '0' : String(Buffer.byteLength(body)),
        'x-ms-error-code': code,
        'x-ms-request-id': requestId,
        'x-ms-version': '2025-01-05',
      });
      res.end(req.method === 'HEAD' ? undefined : body);
    });
  }

  private hold(req: IncomingMessage): void {
    const socket = req.socket;
    socket.setTimeout(0);
    const release = (): void => {
      const t = this.held.get(socket);
      if (t) clearTimeout(t);
      this.held.delete(socket);
    };
    this.held.set(
      socket,
      setTimeout(() => {
        release();
        socket.destroy();
      }, this.stallMaxMs),
    );
    socket.once('close', release);
  }

  private forward(service: StorageService, req: IncomingMessage, res: ServerResponse, dropResponse: boolean): void {
    this.tally.forwarded++;
    const port = service === 'blob' ? this.upstream.blobPort : this.upstream.queuePort;
    const headers: IncomingHttpHeaders = {};
    for (const [k, v] of Object.entries(req.headers)) if (!HOP_BY_HOP.has(k)) headers[k] = v;
    headers.host = `127.0.0.1:${port}`;
    const up = httpRequest({ host: '127.0.0.1', port, method: req.method, path: req.url, headers, agent: this.agent });
    up.on('response', (answer) => {
      if (dropResponse) {
        // Azurite has applied the request; read its answer to the end, then lose it.
        answer.resume();
        answer.once('end', () => req.socket.destroy());
        return;
      }
      const out: Record<string, string | string[]> = {};
      for (const [k, v] of Object.entries(answer.headers)) if (v !== undefined && !HOP_BY_HOP.has(k)) out[k] = v;
      res.writeHead(answer.statusCode ?? 502, out);
      answer.pipe(res);
    });
    up.on('error', () => {
      if (!res.headersSent) {
        res.writeHead(502, { 'Content-Type': 'text/plain' });
        res.end('storage proxy: upstream failed');
      } else res.destroy();
    });
    // The client gave up (its timeout, or a test closing): stop the upstream request too.
    res.once('close', () => {
      if (!res.writableFinished) up.destroy();
    });
    req.pipe(up);
  }
}

/** Starts a proxy in front of an Azurite (or anything with blob and queue ports). */
export const startStorageProxy = (upstream: UpstreamPorts, options: StorageProxyOptions = {}): Promise<StorageProxy> =>
  StorageProxy.start(upstream, options);
