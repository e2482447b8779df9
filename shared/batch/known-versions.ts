/** Manifests whose last version this process saw it keeps (a few MB at most: most are a few hundred bytes). */
const MAX_KNOWN = 256;
const MAX_KNOWN_CHARS = 4 * 1024 * 1024;

/**
 * The last version of each recent manifest this process read or wrote, so that `update` can
 * write on it at once: the write's If-Match is what proves it still current, as it proves a
 * version just read. On one instance (a small batch ingested and reduced by the same process)
 * that saves the read of every read-modify-write; a version another process has since replaced
 * costs one refused write, then the read as before.
 */
export class KnownVersions {
  private readonly byId = new Map<string, { text: string; etag: string }>();
  private chars = 0;

  get(batchId: string): { text: string; etag: string } | undefined {
    return this.byId.get(batchId);
  }

  set(batchId: string, text: string, etag: string): void {
    this.forget(batchId);
    if (text.length > MAX_KNOWN_CHARS / 4) return;
    this.byId.set(batchId, { text, etag });
    this.chars += text.length;
    // Oldest first out (a Map iterates in insertion order).
    for (const [id] of this.byId) {
      if (this.byId.size <= MAX_KNOWN && this.chars <= MAX_KNOWN_CHARS) break;
      this.forget(id);
    }
  }

  forget(batchId: string): void {
    const had = this.byId.get(batchId);
    if (!had) return;
    this.chars -= had.text.length;
    this.byId.delete(batchId);
  }
}
