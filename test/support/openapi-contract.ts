/**
 * The OpenAPI document (static/openapi.json) as a checker of both directions: a request's path,
 * method, parameters, media type and JSON body against what the document says the route takes, and
 * a response's status, the API's own headers and its body against what it says the route answers.
 * ajv compiles the document's schemas (JSON Schema 2020-12, as OpenAPI 3.1 uses).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';

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
const CHECKED_HEADERS = [
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

/** A request as the checker sees it, from fetch's arguments or from an HttpRequest a test built. */
export interface ObservedRequest {
  method: string;
  /** The URL path, e.g. `/api/batches/b-1/report`. */
  path: string;
  /** The route's parameters where the caller knows them (a handler called directly); else from the path. */
  params?: Record<string, string>;
  query: URLSearchParams;
  /** Header names in lower case. */
  headers: Record<string, string>;
  /** The body's bytes; undefined when they cannot be seen without consuming them (a stream) or are too many. */
  body: Buffer | undefined;
}

/**
 * Bodies past this many bytes (raw or inflated) are not parsed and validated: the suite sends
 * batches of up to 150 MB on purpose, and their schema is the same as the small ones'.
 */
export const MAX_CHECKED_BODY_BYTES = 8 * 1024 * 1024;

/** What an operation takes: its parameters and its request body. */
interface ParameterObject {
  $ref?: string;
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  schema?: unknown;
}

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
  parameters?: ParameterObject[];
  requestBody?: { required?: boolean; content: Record<string, { schema?: unknown }> };
  responses: Record<string, ResponseObject>;
}

interface Document {
  paths: Record<string, Record<string, unknown>>;
  'x-host-responses': { noSuchRoute: ResponseObject };
  components: { securitySchemes?: Record<string, { type: string; in?: string; name?: string }> };
  [key: string]: unknown;
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const DOC_ID = 'openapi.json';
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

/** `~` and `/` escaped for a JSON pointer segment. */
const pointer = (...segments: string[]): string =>
  segments.map((s) => s.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

export const OPENAPI_PATH = 'static/openapi.json';

function readOpenApiDocument(root: string = repoRoot()): Document {
  return JSON.parse(readFileSync(join(root, OPENAPI_PATH), 'utf8')) as Document;
}

export class OpenApiContract {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  private readonly routes: { template: string; re: RegExp; names: string[] }[];

  constructor(readonly doc: Document = readOpenApiDocument()) {
    this.ajv.addFormat('date-time', DATE_TIME);
    this.ajv.addFormat('uri', (s: string) => URL.canParse(s));
    this.ajv.addSchema(doc, DOC_ID);
    // As the host matches routes: whole segments, case-insensitive, a trailing slash allowed.
    this.routes = Object.keys(doc.paths).map((template) => ({
      template,
      re: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '([^/]+)')}/?$`, 'i'),
      names: [...template.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!),
    }));
  }

  /** The operation `METHOD /path` names (its template), or undefined when the document has none. */
  operationOf(method: string, path: string): string | undefined {
    const route = this.routes.find((x) => x.re.test(path));
    if (!route || !(this.doc.paths[route.template]?.[method.toLowerCase()] as Operation | undefined)) return undefined;
    return `${method.toUpperCase()} ${route.template}`;
  }

  /** Every documented `METHOD /template status` (a wildcard such as `4XX` as written). */
  documentedStatuses(): string[] {
    return Object.entries(this.doc.paths).flatMap(([path, item]) =>
      Object.entries(item)
        .filter(([m]) => METHODS.includes(m))
        .flatMap(([m, op]) => Object.keys((op as Operation).responses).map((s) => `${m.toUpperCase()} ${path} ${s}`)),
    );
  }

  /** The documented response key (`404`, `4XX`, `default`) an answer of `status` falls under. */
  responseKey(method: string, template: string, status: number): string | undefined {
    const op = this.doc.paths[template]?.[method.toLowerCase()] as Operation | undefined;
    const key = String(status);
    return [key, `${key[0]}XX`, 'default'].find((k) => op?.responses[k] !== undefined);
  }

  /**
   * What is wrong with `r` against what the document says its operation takes; empty when it
   * matches. Security is not checked: which credential a request needs depends on the deployment's
   * PUSHDRAIN_AUTH, and refusing a missing one is what the auth tests are for.
   */
  checkRequest(r: ObservedRequest): string[] {
    const route = this.routes.find((x) => x.re.test(r.path));
    if (!route) return [`${r.path} is not in the document`];
    const method = r.method.toLowerCase();
    const op = this.doc.paths[route.template]?.[method] as Operation | undefined;
    if (!op) return [`${r.method} ${route.template} is not in the document`];
    const at = ['paths', route.template, method];
    const problems: string[] = [];
    const matched = route.re.exec(r.path)!;
    const fromPath = Object.fromEntries(route.names.map((n, i) => [n, matched[i + 1]!]));
    const queryNames = new Set(
      Object.values(this.doc.components.securitySchemes ?? {})
        .filter((s) => s.in === 'query' && s.name !== undefined)
        .map((s) => s.name!),
    );
    (op.parameters ?? []).forEach((declared, i) => {
      const param = declared.$ref ? (this.resolve(declared.$ref) as ParameterObject) : declared;
      const where = declared.$ref
        ? [...declared.$ref.replace(/^#\//, '').split('/'), 'schema']
        : [...at, 'parameters', String(i), 'schema'];
      let value: string | undefined;
      if (param.in === 'query') {
        queryNames.add(param.name);
        value = r.query.get(param.name) ?? undefined;
      } else if (param.in === 'header') value = r.headers[param.name.toLowerCase()];
      else if (param.in === 'path') {
        const raw = r.params?.[param.name] ?? fromPath[param.name];
        try {
          value = raw === undefined ? undefined : r.params ? raw : decodeURIComponent(raw);
        } catch {
          problems.push(`path parameter ${param.name}: a malformed percent-encoding`);
          return;
        }
      }
      if (value === undefined) {
        if (param.required) problems.push(`required ${param.in} parameter ${param.name} is missing`);
        return;
      }
      const validate = this.validator(where);
      // A query or header value is text; a numeric schema takes it as the number it spells.
      const numeric = /^-?\d+(\.\d+)?$/.test(value) ? Number(value) : undefined;
      if (validate && !validate(value) && (numeric === undefined || !validate(numeric)))
        problems.push(`${param.in} parameter ${param.name}: ${this.errors(validate)}`);
    });
    for (const name of new Set(r.query.keys()))
      if (!queryNames.has(name)) problems.push(`query parameter ${name} is not documented`);
    return [...problems, ...this.checkBody(r, op, at)];
  }

  private checkBody(r: ObservedRequest, op: Operation, at: string[]): string[] {
    const media = (r.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    const declared = op.requestBody;
    if (!declared) return r.body !== undefined && r.body.length > 0 ? ['a body where the operation takes none'] : [];
    if (r.body?.length === 0) return declared.required ? ['the required body is missing'] : [];
    // A body nobody read (a refused caller's) may be empty: no media type is then no fault.
    if (r.body === undefined && media === '') return [];
    const content = declared.content[media];
    if (!content)
      return [`Content-Type ${media || '(none)'} is not one of ${Object.keys(declared.content).join(', ')}`];
    if (r.body === undefined) return [];
    let bytes = r.body;
    const encoding = (r.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
    if (encoding === 'gzip' || encoding === 'x-gzip') {
      try {
        bytes = gunzipSync(bytes, { maxOutputLength: MAX_CHECKED_BODY_BYTES });
      } catch (e) {
        if (e instanceof RangeError) return [];
        return ['the body is not valid gzip'];
      }
    } else if (encoding !== 'identity') return [];
    if (bytes.length > MAX_CHECKED_BODY_BYTES) return [];
    const validate = this.validator([...at, 'requestBody', 'content', media, 'schema']);
    if (!validate) return [];
    // NDJSON is a string to the document (what each line holds is the app's to judge): only a JSON
    // body is parsed, and must then be UTF-8 JSON.
    if (media !== 'application/json' && !media.endsWith('+json')) return validate(bytes.toString()) ? [] : ['body'];
    let value: unknown;
    try {
      value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
    } catch {
      return ['the body is not UTF-8 JSON'];
    }
    return validate(value) ? [] : [`body ${this.errors(validate)}`];
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
