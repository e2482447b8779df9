/**
 * What an ingest is expected to hold before its body is read, for admission by memory: about one
 * byte per inflated byte of validation, parsing, the duplicate-id table and the kept chunks. The
 * body itself is not held (it is read as it arrives). Measured through the local host
 * (docs/DESIGN.md, "Memory"): a 100 MB plain body added about 101 MB, a 20 MB gzip body (143 MB
 * inflated) about 106 MB. A body whose length is not declared is taken at the cap; a gzip body at
 * ten times its size, at most the inflation cap.
 */
import type { Tuning } from '../config/settings';

const HELD_PER_INFLATED_BYTE = 1;
/** NDJSON of transactions inflates about 7 times; 10 leaves room for a body that compresses better. */
const ASSUMED_INFLATION = 10;

export function ingestBytes(
  declared: number | undefined,
  gzip: boolean,
  limits: Pick<Tuning, 'maxBodyBytes' | 'maxInflatedBytes'>,
): number {
  const body = declared === undefined ? limits.maxBodyBytes : Math.min(declared, limits.maxBodyBytes);
  const inflated = gzip ? Math.min(body * ASSUMED_INFLATION, limits.maxInflatedBytes) : body;
  return Math.ceil(inflated * HELD_PER_INFLATED_BYTE);
}
