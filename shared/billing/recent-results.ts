/**
 * Result headers this process wrote lately, so that finalizing a batch drained here reads
 * them from memory instead of Storage (one blob read per chunk saved). Sound because a
 * result blob is a function of its chunk's bytes: redeliveries and take-overs write the same
 * header. Bounded by characters held; the oldest go first, and a miss simply reads the blob.
 */
export class RecentResults {
  private readonly headers = new Map<string, string>();
  private chars = 0;

  /** @param maxChars UTF-16 code units held at most (the default, 4 Mi, is ~8 MB). */
  constructor(private readonly maxChars = 4 * 1024 * 1024) {}

  put(batchId: string, chunk: number, headerText: string): void {
    if (headerText.length > this.maxChars) return;
    const key = `${batchId}/${chunk}`;
    this.drop(key);
    this.headers.set(key, headerText);
    this.chars += headerText.length;
    for (const [k] of this.headers) {
      if (this.chars <= this.maxChars) break;
      this.drop(k);
    }
  }

  /** The header text of that chunk if held (and forgets it: a batch is finalized once). */
  take(batchId: string, chunk: number): string | undefined {
    const key = `${batchId}/${chunk}`;
    const text = this.headers.get(key);
    this.drop(key);
    return text;
  }

  private drop(key: string): void {
    const text = this.headers.get(key);
    if (text === undefined) return;
    this.headers.delete(key);
    this.chars -= text.length;
  }
}
