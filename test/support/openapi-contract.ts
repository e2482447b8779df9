/**
 * The OpenAPI document (static/openapi.json) as a response checker: a response's status, the API's
 * own headers and its body are held against what the document says the route answers. ajv
 * compiles the document's schemas (JSON Schema 2020-12, as OpenAPI 3.1 uses).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';

import { repoRoot } from './repo';

/** A response as the checker sees it, from fetch or from a handler's HttpResponseInit. */
export interface ObservedResponse {
  method: string;
  /** The URL path, e.g. `/api/batches/b-1/report`. */
  path: string;
  status: number;
  /** Header names in lower case. */
  headers: Record<string, string>;
  /** The body as text ('' for none). */
  body: string;
}

/**
 * The headers that are the API's own (set by the app's handlers or the host's refusals), checked
 * both ways: one the response carries must be documented, a documented required one must be there.
 * Transport and security headers (Date, Content-Length, Connection, CSP…) are not the API's contract.
 */
export const CHECKED_HEADERS = [
  'content-type',
  'location',
  'etag',
  'retry-after',
  'allow',
  'www-authenticate',
  'idempotent-replayed',
  'content-disposition',
  'cache-control',
] as const;

interface HeaderObject {
  required?: boolean;
  schema?: unknown;
  $ref?: string;
}

interface ResponseObject {
  $ref?: string;
  headers?: Record<string, HeaderObject>;
  content?: Record<string, { schema?: unknown }>;
}

interface Operation {
  responses: Record<string, ResponseObject>;
}

interface Document {
  paths: Record<string, Record<string, unknown>>;
  'x-host-responses': { noSuchRoute: ResponseObject };
  [key: string]: unknown;
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const DOC_ID = 'openapi.json';
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

/** `~` and `/` escaped for a JSON pointer segment. */
const pointer = (...segments: string[]): string =>
  segments.map((s) => s.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

export const OPENAPI_PATH = 'static/openapi.json';

export function readOpenApiDocument(root: string = repoRoot()): Document {
  return JSON.parse(readFileSync(join(root, OPENAPI_PATH), 'utf8')) as Document;
}

export class OpenApiContract {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  private readonly routes: { template: string; re: RegExp }[];

  constructor(readonly doc: Document = readOpenApiDocument()) {
    this.ajv.addFormat('date-time', DATE_TIME);
    this.ajv.addFormat('uri', (s: string) => URL.canParse(s));
    this.ajv.addSchema(doc, DOC_ID);
    // As the host matches routes: whole segments, case-insensitive, a trailing slash allowed.
    this.routes = Object.keys(doc.paths).map((template) => ({
      template,
      re: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}/?$`, 'i'),
    }));
  }

  /** Every `METHOD /path` the document describes. */
  operations(): string[] {
    return Object.entries(this.doc.paths).flatMap(([path, item]) =>
      Object.keys(item)
        .filter((m) => METHODS.includes(m))
        .map((m) => `${m.toUpperCase()} ${path}`),
    );
  }

  /** What is wrong with `r` against the document; empty when it matches. */
  check(r: ObservedResponse): string[] {
    const route = this.routes.find((x) => x.re.test(r.path));
    if (!route) {
      if (r.status !== 404) return [`${r.path} is not in the document (answered ${r.status})`];
      return this.checkResponse(r, this.doc['x-host-responses'].noSuchRoute, ['x-host-responses', 'noSuchRoute']);
    }
    const method = r.method.toLowerCase();
    const op = this.doc.paths[route.template]?.[method] as Operation | undefined;
    if (!op) {
      if (r.status !== 404) return [`${r.method} ${route.template} is not in the document (answered ${r.status})`];
      return this.checkResponse(r, this.doc['x-host-responses'].noSuchRoute, ['x-host-responses', 'noSuchRoute']);
    }
    const key = String(r.status);
    const wildcard = `${key[0]}XX`;
    const found = [key, wildcard, 'default'].find((k) => op.responses[k] !== undefined);
    if (!found) return [`${r.method} ${route.template} does not document status ${r.status}`];
    return this.checkResponse(r, op.responses[found]!, ['paths', route.template, method, 'responses', found]);
  }

  private checkResponse(r: ObservedResponse, declared: ResponseObject, at: string[]): string[] {
    let response = declared;
    let where = at;
    if (response.$ref) {
      where = response.$ref.replace(/^#\//, '').split('/');
      response = this.resolve(response.$ref) as ResponseObject;
    }
    const problems: string[] = [];
    const documented = Object.fromEntries(
      Object.entries(response.headers ?? {}).map(([name, h]) => [name.toLowerCase(), { name, h }]),
    );
    for (const name of CHECKED_HEADERS) {
      if (name === 'content-type') continue;
      const value = r.headers[name];
      const doc = documented[name];
      if (value !== undefined && !doc) problems.push(`header ${name} is not documented`);
      if (!doc) continue;
      const header = doc.h.$ref ? (this.resolve(doc.h.$ref) as HeaderObject) : doc.h;
      if (value === undefined) {
        if (header.required) problems.push(`required header ${doc.name} is missing`);
        continue;
      }
      const validate = this.validator([...where, 'headers', doc.name, ...(doc.h.$ref ? [] : ['schema'])], doc.h.$ref);
      if (validate && !validate(value)) problems.push(`header ${doc.name}: ${this.errors(validate)}`);
    }
    if (r.body === '') {
      // A 304 (and a HEAD) has no body whatever the content type says.
      if (response.content && r.status !== 304 && r.method !== 'HEAD') problems.push('the documented body is missing');
      return problems;
    }
    const media = (r.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    const content = response.content?.[media];
    if (!content) {
      const types = Object.keys(response.content ?? {});
      problems.push(
        types.length === 0
          ? 'a body where none is documented'
          : `Content-Type ${media || '(none)'} is not one of ${types.join(', ')}`,
      );
      return problems;
    }
    const validate = this.validator([...where, 'content', media, 'schema']);
    if (!validate) return problems;
    let value: unknown = r.body;
    if (media === 'application/json' || media.endsWith('+json')) {
      try {
        value = JSON.parse(r.body);
      } catch {
        return [...problems, 'the body is not JSON'];
      }
    }
    if (!validate(value)) problems.push(`body ${this.errors(validate)}`);
    return problems;
  }

  /** A header's `$ref` is compiled from its target's schema; otherwise the schema at `at`. */
  private validator(at: string[], headerRef?: string): ValidateFunction | undefined {
    const ref = headerRef ? `${DOC_ID}${headerRef}/schema` : `${DOC_ID}#/${pointer(...at)}`;
    const target = this.resolve(ref.slice(DOC_ID.length));
    if (target === undefined) return undefined;
    return this.ajv.getSchema(ref);
  }

  private resolve(ref: string): unknown {
    return ref
      .replace(/^#\//, '')
      .split('/')
      .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce<unknown>((node, key) => (node as Record<string, unknown> | undefined)?.[key], this.doc);
  }

  private errors(validate: ValidateFunction): string {
    return (validate.errors ?? [])
      .slice(0, 5)
      .map((e) => {
        const extra =
          e.keyword === 'additionalProperties' || e.keyword === 'unevaluatedProperties'
            ? ` (${String((e.params as Record<string, unknown>).additionalProperty ?? (e.params as Record<string, unknown>).unevaluatedProperty)})`
            : '';
        return `${e.instancePath || '/'} ${e.message ?? e.keyword}${extra}`;
      })
      .join('; ');
  }
}
