/**
 * The version rule of every stored or queued format (docs/DEPLOY.md, "Changing a format"). Each
 * says its version in `v`. A change that a reader of the version before can still read (fields
 * added, none removed, none changed in meaning) also says `min`: the oldest version that reads
 * it. A reader takes a version it knows, and a newer one whose `min` it knows (reading it as its
 * own newest: the added fields are ignored); a newer version it cannot read is a NewerFormatError,
 * which the queue worker hands back for a newer instance instead of poisoning it, and an older
 * version than it keeps is a PermanentError (no build reads it any more).
 */
import { NewerFormatError, PermanentError } from '../errors';

/** The versions one build reads of one format, oldest first. */
export interface FormatVersions {
  readonly name: string;
  readonly oldest: number;
  readonly newest: number;
}

/**
 * Every versioned format this build reads or writes. A change to a format moves its line here,
 * and the test of the rule (test/drain/format-version.test.ts) reads this table.
 */
export const FORMATS = {
  /** Queue `work-{p}`: a pointer to one chunk (shared/model/chunk-codec.ts). */
  workPointer: { name: 'work pointer', oldest: 1, newest: 1 },
  /** Queue `results`: a pointer to one billed chunk (shared/model/chunk-codec.ts). */
  resultPointer: { name: 'result pointer', oldest: 1, newest: 1 },
  /** Blob `results/{batchId}/{chunk}`: its header line (shared/billing/result-blob.ts). */
  resultHeader: { name: 'result blob header', oldest: 1, newest: 3 },
} as const satisfies Record<string, FormatVersions>;

const isVersion = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 1;

/**
 * The version to read `o` as (`o.v`, or this build's newest for a newer `v` whose `min` it
 * reads). Throws NewerFormatError for a newer version it cannot read, PermanentError otherwise.
 */
export function readableVersion(format: FormatVersions, o: Readonly<Record<string, unknown>>): number {
  const { v, min } = o;
  if (!isVersion(v)) throw new PermanentError(`${format.name} has no version (v)`);
  if (v < format.oldest)
    throw new PermanentError(`${format.name} version ${v} is older than any this instance reads (${format.oldest})`);
  if (v <= format.newest) return v;
  if (isVersion(min) && min <= format.newest && min >= format.oldest) return format.newest;
  throw new NewerFormatError(format.name, v, format.newest);
}
