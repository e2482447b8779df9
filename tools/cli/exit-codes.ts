/** The CLI's exit codes (README "CLI" lists them; scripts may rely on them). */
export const EXIT = {
  ok: 0,
  /** Anything unexpected: a bug, or a local file that cannot be read or written. */
  error: 1,
  /** Bad command line: unknown command or option, missing argument. */
  usage: 2,
  /** The app refused the input: validation (400), conflict (409, 422), too large (413), media type (415); `callbacks verify`: a check failed. */
  rejected: 3,
  /**
   * The batch ended `failed`: submit, while waiting; report of a failed batch (it has no report).
   * `webhooks test`: a webhook did not answer 2xx.
   */
  failed: 4,
  /** No such batch (404). */
  notFound: 5,
  /** Not finished: the report is not ready (409), or the wait timed out. */
  notReady: 6,
  /** The app could not be reached, or answered 5xx/429. */
  unavailable: 7,
  /** The key was refused (401/403). */
  auth: 8,
  /** `verify`: a digest or a figure does not agree. */
  mismatch: 9,
} as const;
