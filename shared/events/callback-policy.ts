/**
 * Which `Callback-Url` a client may give (POST /api/batches): https (http only on loopback), no
 * credentials, at most 2,048 characters, and an origin that PUSHDRAIN_CALLBACK_ORIGINS allows,
 * either exactly (`https://billing.example.com`) or as a subdomain of a wildcard entry
 * (`https://*.example.com`). Only an exact entry is "explicitly allowlisted": its deliveries may
 * reach a private address; a wildcard match goes through the SSRF guard at every delivery.
 */
import { parseEndpoint } from '../config/event-settings';
import { ValidationError } from '../errors';

const MAX_LENGTH = 2048;

function refuse(message: string): ValidationError {
  return new ValidationError(message, { code: 'callback_not_allowed' });
}

/** True when `entry` (an origin, or `scheme://*.suffix[:port]`) admits `url`'s origin. */
function originMatches(entry: string, url: URL): boolean {
  if (entry === url.origin) return true;
  const m = /^(https?):\/\/\*\.([^/:]+)(?::(\d+))?$/.exec(entry);
  if (!m) return false;
  const [, scheme, suffix, port] = m;
  return (
    url.protocol === `${scheme}:` &&
    url.hostname.toLowerCase().endsWith(`.${suffix!.toLowerCase()}`) &&
    url.port === (port ?? '')
  );
}

/** True while some entry of PUSHDRAIN_CALLBACK_ORIGINS admits `url`'s origin (checked again at every attempt). */
export function isAllowedOrigin(origins: readonly string[], url: string): boolean {
  try {
    const parsed = new URL(url);
    return origins.some((entry) => originMatches(entry, parsed));
  } catch {
    return false;
  }
}

/** Explicitly allowlisted: an exact entry names this origin (the SSRF guard lets it reach private addresses). */
export function isExplicitlyAllowed(origins: readonly string[], url: string): boolean {
  try {
    return origins.includes(new URL(url).origin);
  } catch {
    return false;
  }
}

/** The callback to store on the manifest, or a 400 callback_not_allowed (nothing is written). */
export function checkCallbackUrl(raw: string, origins: readonly string[]): string {
  if (raw.length > MAX_LENGTH) throw refuse(`Callback-Url is longer than ${MAX_LENGTH} characters`);
  const url = parseEndpoint(raw.trim());
  if (!url) throw refuse('Callback-Url must be an https URL (http only on loopback), without credentials');
  if (!origins.some((entry) => originMatches(entry, url)))
    throw refuse(`Callback-Url origin ${url.origin} is not in PUSHDRAIN_CALLBACK_ORIGINS`);
  url.hash = '';
  return url.href;
}
