/**
 * `GET /api/dashboard`: one self-contained HTML response (no CDN, works offline). The page is
 * a shell: it holds no data and no key. It asks for the function key (or reads it from the
 * URL fragment, which never reaches a server) and reads everything from
 * `GET /api/ops/status`. Its files are read from `static/dashboard/` at the app's root (shipped
 * by both deploy modes); the style and script are inlined here and allowed by hash in a strict CSP.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

import type { SignInSettings } from '../config/auth-settings';

export interface DashboardPage {
  body: string;
  headers: Record<string, string>;
}

/** dist/shared/status → the app's root → static/dashboard. */
const DASHBOARD_DIR = join(__dirname, '..', '..', '..', 'static', 'dashboard');

const hash = (text: string): string => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

/** MSAL's browser bundle, from the pinned package (never a CDN): inlined and allowed by its hash. */
function msalBundle(): string {
  const file = join(dirname(require.resolve('@azure/msal-browser/package.json')), 'lib', 'msal-browser.min.js');
  return readFileSync(file, 'utf8');
}

/**
 * With `signIn` the page also carries MSAL (a second inline script with its own hash) and its
 * configuration (a JSON data block, which is never executed), and may fetch from the authority's
 * origin (discovery, token); without it, it is the pasted-token and key page only.
 */
export function buildDashboardPage(dir: string = DASHBOARD_DIR, signIn?: SignInSettings): DashboardPage {
  const read = (name: string): string => readFileSync(join(dir, name), 'utf8');
  const style = read('dashboard.css');
  const script = read('dashboard.js');
  const template = read('index.html');
  if (!template.includes('/*STYLE*/') || !template.includes('/*SCRIPT*/') || !template.includes('<!--SIGN-IN-->'))
    throw new Error(`${join(dir, 'index.html')} lacks its /*STYLE*/, /*SCRIPT*/ or <!--SIGN-IN--> slot`);
  const msal = signIn ? msalBundle() : '';
  if (msal.includes('</script')) throw new Error('the MSAL bundle cannot be inlined: it contains </script');
  const config = signIn && JSON.stringify(signIn).replace(/</g, '\\u003c');
  const signInHtml = signIn
    ? `<script type="application/json" id="sign-in-config">${config}</script>\n<script>${msal}</script>`
    : '';
  const body = template
    .replace('/*STYLE*/', () => style)
    .replace('<!--SIGN-IN-->', () => signInHtml)
    .replace('/*SCRIPT*/', () => script);
  const csp = [
    "default-src 'none'",
    `script-src ${hash(script)}${signIn ? ` ${hash(msal)}` : ''}`,
    `style-src ${hash(style)}`,
    `connect-src 'self'${signIn ? ` ${new URL(signIn.authority).origin}` : ''}`,
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
