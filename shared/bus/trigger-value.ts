/** A trigger body as a value: JSON text or bytes are parsed (undefined when not JSON); anything else is taken as is. */
export function triggerValue(body: unknown): unknown {
  if (typeof body === 'string') return safeJson(body);
  if (body instanceof Uint8Array) return safeJson(Buffer.from(body).toString('utf8'));
  return body;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
