/**
 * What the app shows of text it did not write (an SDK's error, a webhook's answer, a connection
 * string): one rule set for the credentials masked wherever such text goes (a log line, an HTTP
 * answer, the `npm start` banner), and for someone who may not see an endpoint, URLs cut to their
 * origin, since a callback's path and query are the client's and a query may carry a token.
 */
const MAX_ERROR = 200;

/** Each credential that text can carry, and how it is masked (the name stays: it says what was there). */
const SECRETS: readonly [RegExp, string][] = [
  // Storage and Service Bus connection strings.
  [/(AccountKey|SharedAccessKey)=[^;\s]*/gi, '$1=***'],
  // A SAS connection string (`SharedAccessSignature=sv=…`) or a Service Bus token (`SharedAccessSignature sr=…`).
  [/(SharedAccessSignature)([=\s])[^;\s]*/gi, '$1$2***'],
  // A SAS query's signature, also URL-encoded.
  [/(^|[?&;\s])(sig(?:=|%3D))[^&;\s]*/gi, '$1$2***'],
  // Query or form values named as secrets (a callback's `?code=`, `?token=`).
  [/\b(secret|token|code)=[^&;\s]*/gi, '$1=***'],
  // A Standard Webhooks secret, and a callback signing key.
  [/whsec_[A-Za-z0-9+/=]+/g, 'whsec_***'],
  [/whsk_[A-Za-z0-9+/=]+/g, 'whsk_***'],
  // A bearer token, and a JWT wherever it stands (its header always starts `eyJ`).
  [/\b(Bearer\s+)[A-Za-z0-9._~+/-]{20,}=*/gi, '$1***'],
  [/\beyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g, 'eyJ***'],
  // Webhook URLs whose path is the secret (Slack, Teams, Discord): the path goes.
  [
    /(https?:\/\/(?:hooks\.slack\.com|[a-z0-9-]+\.webhook\.office\.com|outlook\.office(?:365)?\.com|(?:ptb\.|canary\.)?discord(?:app)?\.com))\/[^\s"'<>]*/gi,
    '$1/***',
  ],
];

/** Masks every credential in `text`; the rest is kept (a log line for the operator). */
export function redactSecrets(text: string): string {
  return SECRETS.reduce((out, [pattern, mask]) => out.replace(pattern, mask), text);
}

/** A URL as its origin; a topic name (or anything else) as it is. */
export function originOf(target: string): string {
  try {
    const u = new URL(target);
    return u.origin === 'null' ? target : u.origin;
  } catch {
    return target;
  }
}

/** An attempt's error for someone who may not see the endpoint: URLs as origins, credentials masked, short. */
export function redactError(text: string): string {
  return redactSecrets(text.replace(/\bhttps?:\/\/[^\s"'<>]+/gi, (url) => originOf(url.replace(/[),.;]+$/, '')))).slice(
    0,
    MAX_ERROR,
  );
}
