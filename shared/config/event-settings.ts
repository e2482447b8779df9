/**
 * The batch-event settings: the operator's webhooks, their signing secret, the retry schedule and
 * the origins a client may name as its batch's callback. The secret is held in a `Secret`, which
 * prints as `[redacted]` wherever the settings are logged, serialised or inspected.
 */
import { inspect } from 'node:util';

import { ConfigError } from '../errors';
import type { Env } from './connections';

/** Standard Webhooks' recommendation: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. */
export const DEFAULT_RETRY_SCHEDULE = '5,300,1800,7200,18000,36000,36000';

/** The shortest signing secret accepted, in bytes (Standard Webhooks: 24 to 64). */
const MIN_SECRET_BYTES = 24;

/** A value that must never be printed: only `reveal()` gives it. */
export class Secret {
  readonly #value: string;
  constructor(value: string) {
    this.#value = value;
  }
  reveal(): string {
    return this.#value;
  }
  toString(): string {
    return '[redacted]';
  }
  toJSON(): string {
    return '[redacted]';
  }
  [inspect.custom](): string {
    return '[redacted]';
  }
}

export interface EventSettings {
  /** PUSHDRAIN_WEBHOOK_URL: every batch's event goes to each. @defaultValue [] */
  webhookUrls: string[];
  /** PUSHDRAIN_WEBHOOK_SECRET (`whsec_…`): signs the operator's webhooks (`v1`, symmetric). */
  secret: Secret | undefined;
  /**
   * PUSHDRAIN_CALLBACK_SIGNING_KEY (`whsk_…`, comma-separated for a rotation, the current first):
   * the ed25519 keys that sign callbacks (`v1a`); required with PUSHDRAIN_CALLBACK_ORIGINS. @defaultValue []
   */
  callbackKeys: Secret[];
  /** PUSHDRAIN_WEBHOOK_RETRY_SCHEDULE: the wait before each retry, in seconds. */
  retryScheduleSeconds: number[];
  /**
   * PUSHDRAIN_CALLBACK_ORIGINS: origins a `Callback-Url` may name, exactly or as `https://*.domain`
   * (see shared/events/callback-policy.ts). @defaultValue []
   */
  callbackOrigins: string[];
}

/** True for a host that is loopback by name or address (where plain http is allowed). */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** An https URL, or http on loopback; never with credentials. Undefined when it is none of those. */
export function parseEndpoint(raw: string): URL | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return undefined;
  }
  if (url.username !== '' || url.password !== '') return undefined;
  if (url.protocol === 'https:') return url;
  if (url.protocol === 'http:' && isLoopbackHost(url.hostname)) return url;
  return undefined;
}

function list(raw: string | undefined): string[] {
  return (raw ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

export function eventSettings(env: Env): EventSettings {
  const webhookUrls = list(env.PUSHDRAIN_WEBHOOK_URL).map((raw, i) => {
    const url = parseEndpoint(raw);
    // The URL may carry a token in its query: name its position, never echo it.
    if (!url)
      throw new ConfigError('PUSHDRAIN_WEBHOOK_URL', `entry ${i + 1} is not an https URL (http only for loopback)`);
    return url.href;
  });
  const rawSecret = env.PUSHDRAIN_WEBHOOK_SECRET?.trim() ?? '';
  if (rawSecret !== '' && !/^whsec_[A-Za-z0-9+/]{16,}={0,2}$/.test(rawSecret))
    throw new ConfigError('PUSHDRAIN_WEBHOOK_SECRET', 'must be a Standard Webhooks secret: whsec_ then base64');
  const secretBytes = Buffer.from(rawSecret.slice('whsec_'.length), 'base64').length;
  // Standard Webhooks asks for 24 to 64 bytes: a shorter key is within reach of a brute force.
  if (rawSecret !== '' && secretBytes < MIN_SECRET_BYTES)
    throw new ConfigError(
      'PUSHDRAIN_WEBHOOK_SECRET',
      `is ${secretBytes} bytes after whsec_; at least ${MIN_SECRET_BYTES} are required (e.g. whsec_ and 32 random bytes in base64)`,
    );
  const callbackOrigins = list(env.PUSHDRAIN_CALLBACK_ORIGINS).map((raw, i) => {
    const entry = raw.replace(/\/$/, '');
    // A wildcard entry admits subdomains (https only): `https://*.example.com[:port]`.
    if (/^https:\/\/\*\.[a-z0-9.-]+\.[a-z0-9-]+(?::\d{1,5})?$/i.test(entry)) {
      const domain = entry.slice('https://*.'.length).replace(/:\d+$/, '').toLowerCase();
      if (isSharedSuffix(domain))
        throw new ConfigError(
          'PUSHDRAIN_CALLBACK_ORIGINS',
          `entry ${i + 1} is a wildcard on ${domain}, where anyone can have a name: list the origins exactly`,
        );
      return entry.toLowerCase();
    }
    const url = parseEndpoint(raw);
    if (!url || url.origin !== entry)
      throw new ConfigError(
        'PUSHDRAIN_CALLBACK_ORIGINS',
        `entry ${i + 1} is not an origin (https://host[:port] or https://*.domain, http only for loopback)`,
      );
    return url.origin;
  });
  if (rawSecret === '' && (webhookUrls.length > 0 || callbackOrigins.length > 0))
    throw new ConfigError(
      'PUSHDRAIN_WEBHOOK_SECRET',
      'is required with PUSHDRAIN_WEBHOOK_URL or PUSHDRAIN_CALLBACK_ORIGINS',
    );
  const secret = rawSecret === '' ? undefined : new Secret(rawSecret);
  const keys = callbackKeys(env.PUSHDRAIN_CALLBACK_SIGNING_KEY);
  // No key is derived from the webhook secret: every operator receiver holds that secret, and
  // could then sign any client's callback. Allowing callbacks means choosing their key.
  if (callbackOrigins.length > 0 && keys.length === 0)
    throw new ConfigError(
      'PUSHDRAIN_CALLBACK_SIGNING_KEY',
      'is required with PUSHDRAIN_CALLBACK_ORIGINS: it signs the callbacks (whsk_ and the base64 of 32 random bytes, which `openssl rand -base64 32` prints)',
    );
  return {
    webhookUrls,
    secret,
    callbackKeys: keys,
    retryScheduleSeconds: retrySchedule(env.PUSHDRAIN_WEBHOOK_RETRY_SCHEDULE),
    callbackOrigins,
  };
}

/**
 * Domains under which strangers get names: a country's second level (`co.uk`, `com.au`) and the
 * shared hosting domains a client's receiver most often sits on (Azure's among them). Not the whole
 * Public Suffix List (no dependency for it): a wildcard is for a domain the operator controls, and
 * docs/SECURITY.md says to list origins exactly otherwise.
 */
const SHARED_SUFFIXES = new Set([
  'azurewebsites.net',
  'azurestaticapps.net',
  'azure-api.net',
  'azureedge.net',
  'azurefd.net',
  'azurecontainerapps.io',
  'cloudapp.azure.com',
  'cloudapp.net',
  'core.windows.net',
  'blob.core.windows.net',
  'web.core.windows.net',
  'trafficmanager.net',
  'servicebus.windows.net',
  'amazonaws.com',
  'cloudfront.net',
  'appspot.com',
  'run.app',
  'web.app',
  'firebaseapp.com',
  'herokuapp.com',
  'github.io',
  'githubusercontent.com',
  'gitlab.io',
  'netlify.app',
  'vercel.app',
  'pages.dev',
  'workers.dev',
  'fly.dev',
  'onrender.com',
  'ngrok.io',
  'ngrok-free.app',
  'ngrok.app',
]);

function isSharedSuffix(domain: string): boolean {
  if (SHARED_SUFFIXES.has(domain)) return true;
  const labels = domain.split('.');
  // A country code's second level: `co.uk`, `com.au`, `ac.jp`, `gov.br`, `ne.jp`…
  return (
    labels.length === 2 &&
    /^[a-z]{2}$/.test(labels[1] ?? '') &&
    /^(co|com|net|org|gov|edu|ac|ne|or|go|gv|mil|nic|ltd|plc|me|info|biz)$/.test(labels[0] ?? '')
  );
}

function retrySchedule(raw: string | undefined): number[] {
  const text = raw === undefined || raw.trim() === '' ? DEFAULT_RETRY_SCHEDULE : raw;
  const steps = text.split(',').map((s) => s.trim());
  if (steps.length > 20 || steps.some((s) => !/^\d{1,6}$/.test(s) || Number(s) > 7 * 24 * 3600))
    throw new ConfigError(
      'PUSHDRAIN_WEBHOOK_RETRY_SCHEDULE',
      `must be up to 20 comma-separated whole seconds (each at most a week), got "${text}"`,
    );
  return steps.map(Number);
}

/**
 * The callback signing keys: each `whsk_` and the base64 of a 32-byte ed25519 seed (or of the
 * 64-byte seed-and-public-key form). None when unset.
 */
function callbackKeys(raw: string | undefined): Secret[] {
  return list(raw).map((entry, i) => {
    const bytes = /^whsk_[A-Za-z0-9+/]+={0,2}$/.test(entry)
      ? Buffer.from(entry.slice('whsk_'.length), 'base64').length
      : -1;
    // The value is a private key: name its position, never echo it.
    if (bytes !== 32 && bytes !== 64)
      throw new ConfigError(
        'PUSHDRAIN_CALLBACK_SIGNING_KEY',
        `entry ${i + 1} must be whsk_ and the base64 of a 32-byte ed25519 seed (32 random bytes make one)`,
      );
    return new Secret(entry);
  });
}
