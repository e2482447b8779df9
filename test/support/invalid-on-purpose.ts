/**
 * Marks a request a test sends to pushdrain's API as invalid on purpose (a malformed batch id, a
 * body the document does not allow, a route that does not exist), so that the request check of
 * the OpenAPI preload (openapi-preload.ts) lets it through. The mark is a header the preload takes
 * off before the request leaves (fetch) and the handlers never read (a handler called directly).
 * A marked request that is valid per the document fails the test: the mark must not hide a test
 * that no longer sends what it meant to.
 */
export const INVALID_ON_PURPOSE = 'x-pushdrain-invalid-on-purpose';

/** `headers` with the mark added: pass the result as the request's headers. */
export function invalidOnPurpose(headers: Record<string, string> = {}): Record<string, string> {
  return { ...headers, [INVALID_ON_PURPOSE]: '1' };
}
