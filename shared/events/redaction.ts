/**
 * What a delivery's target and error may show outside the manifest (the status report, the test
 * event's answer): a URL as its origin, since a callback's path and query are the client's and a
 * query may carry a token; an error cut short, its URLs cut to their origin and its keys masked.
 */
const MAX_ERROR = 200;

/** A URL as its origin; a topic name (or anything else) as it is. */
export function originOf(target: string): string {
  try {
    const u = new URL(target);
    return u.origin === 'null' ? target : u.origin;
  } catch {
    return target;
  }
}

/** An attempt's error for someone who may not see the endpoint: URLs as origins, keys and signatures masked, short. */
export function redactError(text: string): string {
  return text
    .replace(/\bhttps?:\/\/[^\s"'<>]+/gi, (url) => originOf(url.replace(/[),.;]+$/, '')))
    .replace(/(AccountKey|SharedAccessKey|SharedAccessSignature|sig|secret|token|code)=[^;&\s]*/gi, '$1=***')
    .replace(/whsec_[A-Za-z0-9+/=]+/g, 'whsec_***')
    .slice(0, MAX_ERROR);
}
