/**
 * `GET /api/dashboard`: one self-contained HTML response (no CDN, works offline). The page is
 * a shell: it holds no data and no key. It asks for the function key (or reads it from the
 * URL fragment, which never reaches a server) and reads everything from
 * `GET /api/admin/status`. Its files are read from `static/dashboard/` at the app's root (shipped
 * by both deploy modes); the style and script are inlined here and allowed by hash in a strict CSP.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface DashboardPage {
  body: string;
  headers: Record<string, string>;
}

/** dist/shared/status → the app's root → static/dashboard. */
export const DASHBOARD_DIR = join(__dirname, '..', '..', '..', 'static', 'dashboard');

const hash = (text: string): string => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

export function buildDashboardPage(dir: string = DASHBOARD_DIR): DashboardPage {
  const read = (name: string): string => readFileSync(join(dir, name), 'utf8');
  const style = read('dashboard.css');
  const script = read('dashboard.js');
  const template = read('index.html');
  if (!template.includes('/*STYLE*/') || !template.includes('/*SCRIPT*/'))
    throw new Error(`${join(dir, 'index.html')} lacks its /*STYLE*/ or /*SCRIPT*/ slot`);
  const body = template.replace('/*STYLE*/', () => style).replace('/*SCRIPT*/', () => script);
  const csp = [
    "default-src 'none'",
    `script-src ${hash(script)}`,
    `style-src ${hash(style)}`,
    "connect-src 'self'",
    "img-src 'self' data:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
  return {
    body,
    headers: {
      'Content-Type': 'text/html; charset=utf-8',
      'Content-Security-Policy': csp,
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'no-referrer',
      'Cache-Control': 'no-cache',
      ETag: `"${createHash('sha256').update(body).digest('hex').slice(0, 32)}"`,
    },
  };
}
