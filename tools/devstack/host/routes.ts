/**
 * The local host's HTTP route table, compiled from the captured registrations and the
 * route prefix in host.json: the same routes, methods and auth levels Azure serves.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { type Registration, type Registry, triggerOf } from './registry';

export interface RouteEntry {
  functionName: string;
  /** Full template with the prefix, e.g. `api/batches/{batchId}`. */
  template: string;
  methods: string[];
  authLevel: string;
  registration: Registration;
  match(path: string): Record<string, string> | undefined;
}

/** `extensions.http.routePrefix` from host.json; Azure's default is `api`. */
export function routePrefix(root: string): string {
  const host = JSON.parse(readFileSync(join(root, 'host.json'), 'utf8')) as {
    extensions?: { http?: { routePrefix?: string } };
  };
  return host.extensions?.http?.routePrefix ?? 'api';
}

/** Compiles `batches/{batchId}` style templates; `{x?}` is optional, `{x:constraint}` keeps the name. */
export function compileTemplate(template: string): (path: string) => Record<string, string> | undefined {
  const names: string[] = [];
  const pattern = template
    .split('/')
    .filter((s) => s !== '')
    .map((seg) => {
      const m = /^\{([A-Za-z_][A-Za-z0-9_]*)(?::[^}?]*)?(\?)?\}$/.exec(seg);
      if (!m?.[1]) return `/${seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`;
      names.push(m[1]);
      return m[2] ? '(?:/([^/]+))?' : '/([^/]+)';
    })
    .join('');
  const re = new RegExp(`^${pattern}/?$`, 'i');
  return (path) => {
    const m = re.exec(path);
    if (!m) return undefined;
    const params: Record<string, string> = {};
    names.forEach((n, i) => {
      const v = m[i + 1];
      if (v !== undefined) params[n] = decodeURIComponent(v);
    });
    return params;
  };
}

export function buildRoutes(registry: Registry, prefix: string): RouteEntry[] {
  return registry.functions
    .filter((f) => triggerOf(f).type === 'httpTrigger')
    .map((f) => {
      const t = triggerOf(f);
      const route = typeof t.route === 'string' ? t.route : f.name;
      const template = [prefix, route].filter((s) => s !== '').join('/');
      const methods =
        Array.isArray(t.methods) && t.methods.length > 0
          ? (t.methods as string[]).map((m) => m.toUpperCase())
          : ['GET', 'POST'];
      return {
        functionName: f.name,
        template,
        methods,
        authLevel: typeof t.authLevel === 'string' ? t.authLevel : 'function',
        registration: f,
        match: compileTemplate(template),
      };
    });
}
