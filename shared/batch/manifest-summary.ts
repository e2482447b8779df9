import type { Manifest } from './manifest';

/**
 * The manifest's progress as blob metadata, written in the same request: one listing of
 * `batches/` then shows every batch's state without reading a single manifest (batch-list.ts).
 */
export function manifestSummary(m: Manifest): Record<string, string> {
  return {
    state: m.state,
    transactions: String(m.transactions),
    chunks: String(m.chunks),
    done: String(m.done.length),
    failed: String(m.failed.length),
    submittedat: m.submittedAt,
    ...(m.completedAt ? { completedat: m.completedAt } : {}),
    ...(m.latencyMs !== undefined ? { latencyms: String(m.latencyMs) } : {}),
    // Metadata values are ASCII header text: the reason travels percent-encoded, and short.
    ...(m.error ? { error: encodeURIComponent(m.error.slice(0, 300)) } : {}),
    ...(m.submitter ? { submitter: encodeURIComponent(JSON.stringify(m.submitter)) } : {}),
  };
}
