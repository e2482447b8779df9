/**
 * The CLI's HTTP side: every command talks to the app's API (local or Azure) with the key as
 * `x-functions-key`. Failures become a CliError carrying the exit code (exit-codes.ts) and the
 * server's error body, so `--json` can print it and a human gets the details.
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

import { EXIT } from './exit-codes';

export interface ErrorBody {
  error?: string;
  message?: string;
  details?: { line: number; field: string; message: string }[];
  status?: string;
  /** On a 401/403 from an app with PUSHDRAIN_AUTH=entra: the app roles the route needs (one of). */
  requiredRoles?: string[];
}

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
    readonly body?: ErrorBody,
    readonly httpStatus?: number,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export interface Response {
  status: number;
  headers: Headers;
  text: string;
  /** The body's bytes as received (`verify` hashes them). */
  bytes: Buffer;
}

export interface ClientOptions {
  url: string;
  key?: string;
  /** With `--auth entra`: the access token for each request, sent as `Authorization: Bearer`. */
  bearer?: () => Promise<string>;
  /** Per request, except uploads. @defaultValue 30000 */
  timeoutMs?: number;
}

/** The exit code an HTTP status maps to. */
export function exitFor(status: number): number {
  if (status === 401 || status === 403) return EXIT.auth;
  if (status === 404) return EXIT.notFound;
  if (status >= 500 || status === 429) return EXIT.unavailable;
  return EXIT.rejected;
}

export function parseBody(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function failure(what: string, res: Response): CliError {
  const body = parseBody(res.text) as ErrorBody | undefined;
  const reason =
    (res.status === 401 || res.status === 403) && body?.requiredRoles === undefined
      ? 'the key was refused (use --key, or PUSHDRAIN_KEY; redrive needs the admin key; --auth entra sends a token)'
      : res.status === 403
        ? `missing app role ${(body?.requiredRoles ?? []).join(' or ')}: ${body?.message ?? ''}`
        : (body?.message ?? (res.text.slice(0, 200) || 'no body'));
  return new CliError(`${what}: HTTP ${res.status}: ${reason}`, exitFor(res.status), body, res.status);
}

export class ApiClient {
  readonly base: string;

  constructor(private readonly options: ClientOptions) {
    let u: URL;
    try {
      u = new URL(options.url);
    } catch {
      throw new CliError(`--url "${options.url}" is not a URL`, EXIT.usage);
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:')
      throw new CliError(`--url must be http(s), got ${u.protocol}`, EXIT.usage);
    this.base = u.toString().replace(/\/+$/, '');
  }

  url(path: string): string {
    return `${this.base}${path}`;
  }

  headers(extra: Record<string, string> = {}, key = this.options.key, token?: string): Record<string, string> {
    return {
      ...(key ? { 'x-functions-key': key } : {}),
      ...(token ? { Authorization: `Bearer ${token}` } : {}),
      'User-Agent': 'pushdrain-cli',
      ...extra,
    };
  }

  /** Gets the first token now (a sign-in may prompt or say who the CLI acts as); nothing with keys. */
  async prepare(): Promise<void> {
    await this.token();
  }

  /** The bearer token for the next request (the credential caches and renews it). */
  private token(): Promise<string | undefined> {
    return this.options.bearer ? this.options.bearer() : Promise.resolve(undefined);
  }

  /** One request; network failures become CliError(unavailable). Non-2xx is returned, not thrown. */
  async send(
    method: string,
    path: string,
    init: { body?: string; headers?: Record<string, string>; key?: string } = {},
  ): Promise<Response> {
    const token = await this.token();
    let res: globalThis.Response;
    try {
      res = await fetch(this.url(path), {
        method,
        headers: this.headers(init.headers, init.key ?? this.options.key, token),
        ...(init.body !== undefined ? { body: init.body } : {}),
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 30_000),
      });
    } catch (e) {
      throw unreachable(this.base, e);
    }
    const bytes = Buffer.from(await res.arrayBuffer());
    return { status: res.status, headers: res.headers, text: bytes.toString('utf8'), bytes };
  }

  /** GET a JSON body, throwing CliError on anything but 2xx. */
  async json<T>(what: string, path: string): Promise<T> {
    const res = await this.send('GET', path);
    if (res.status < 200 || res.status >= 300) throw failure(what, res);
    return parseBody(res.text) as T;
  }

  /**
   * A conditional GET: with the ETag of the last answer, a 304 (nothing changed) is `undefined`;
   * otherwise the new body and its ETag. CliError on anything else.
   */
  async jsonIfChanged<T>(what: string, path: string, etag?: string): Promise<{ body: T; etag?: string } | undefined> {
    const res = await this.send('GET', path, etag ? { headers: { 'If-None-Match': etag } } : {});
    if (res.status === 304 && etag) return undefined;
    if (res.status < 200 || res.status >= 300) throw failure(what, res);
    const next = res.headers.get('etag');
    return { body: parseBody(res.text) as T, ...(next ? { etag: next } : {}) };
  }

  async postJson<T>(what: string, path: string, body: unknown, key?: string): Promise<T> {
    const res = await this.send('POST', path, {
      body: JSON.stringify(body),
      headers: { 'Content-Type': 'application/json' },
      ...(key !== undefined ? { key } : {}),
    });
    if (res.status < 200 || res.status >= 300) throw failure(what, res);
    return parseBody(res.text) as T;
  }

  /**
   * POST a (large) body in slices, reporting bytes handed to the socket, and resolve with the
   * answer. node:http rather than fetch: fetch cannot report upload progress.
   */
  async upload(
    path: string,
    body: Buffer,
    headers: Record<string, string>,
    onProgress: (sent: number) => void,
  ): Promise<Response> {
    const token = await this.token();
    const target = new URL(this.url(path));
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const req = send(
        target,
        {
          method: 'POST',
          headers: this.headers({ ...headers, 'Content-Length': String(body.length) }, this.options.key, token),
        },
        (res) => {
          const parts: Buffer[] = [];
          res.on('data', (d: Buffer) => parts.push(d));
          res.on('end', () => {
            const h = new Headers();
            for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') h.set(k, v);
            const bytes = Buffer.concat(parts);
            resolve({ status: res.statusCode ?? 0, headers: h, text: bytes.toString('utf8'), bytes });
          });
          res.on('error', (e) => reject(unreachable(this.base, e)));
        },
      );
      req.on('error', (e) => reject(unreachable(this.base, e)));
      const SLICE = 256 * 1024;
      let offset = 0;
      const pump = (): void => {
        while (offset < body.length) {
          const end = Math.min(body.length, offset + SLICE);
          const more = req.write(body.subarray(offset, end));
          offset = end;
          onProgress(offset);
          if (!more) {
            req.once('drain', pump);
            return;
          }
        }
        req.end();
      };
      pump();
    });
  }
}

function unreachable(base: string, e: unknown): CliError {
  const err = e as { message?: string; cause?: { code?: string; message?: string }; name?: string };
  const why =
    err.name === 'TimeoutError' ? 'timed out' : (err.cause?.code ?? err.cause?.message ?? err.message ?? String(e));
  return new CliError(
    `cannot reach ${base}: ${why} (is the app running? set --url or PUSHDRAIN_URL)`,
    EXIT.unavailable,
  );
}

export { failure as httpFailure };
