/**
 * GET /api/openapi.json: the API's OpenAPI document (static/openapi.json, shipped with the app as
 * the status page is). Anonymous and without a Storage request: it never builds the app, so it
 * answers even when a connection setting is wrong. Read once per process; an ETag for revalidation.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import type { HttpRequest, HttpResponseInit } from '@azure/functions';

import { openRoute } from './http-route';

/** dist/functions → the app's root → static/openapi.json. */
export const OPENAPI_FILE = join(__dirname, '..', '..', 'static', 'openapi.json');

let cached: { body: string; headers: Record<string, string> } | undefined;

function document(): { body: string; headers: Record<string, string> } {
  if (!cached) {
    const body = readFileSync(OPENAPI_FILE, 'utf8');
    cached = {
      body,
      headers: {
        'Content-Type': 'application/json',
        'Cache-Control': 'no-cache',
        ETag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
      },
    };
  }
  return cached;
}

export function getOpenApiDocument(req: HttpRequest): HttpResponseInit {
  const { body, headers } = document();
  if (req.headers.get('if-none-match') === headers.ETag) return { status: 304, headers };
  return { status: 200, body, headers };
}

openRoute('openApiDocument', { route: 'openapi.json', method: 'GET', handler: (req) => getOpenApiDocument(req) });
