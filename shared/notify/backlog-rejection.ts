/**
 * Where the syphon sets a malformed backlog message aside: one JSON record under
 * `rejected/backlog/`, named by the message id, so a redelivery of the same message overwrites its
 * record instead of adding another. A message without an id is named by its record's hash.
 */
import { createHash } from 'node:crypto';

import { layout } from '../layout';
import type { BlobStore } from '../ports';
import type { RejectedBacklogMessage } from './syphon';

export async function writeBacklogRejection(blobs: BlobStore, rejected: RejectedBacklogMessage): Promise<void> {
  const body = Buffer.from(JSON.stringify(rejected, null, 2));
  const id = rejected.messageId ?? createHash('sha256').update(body).digest('hex').slice(0, 32);
  await blobs.write(layout.backlogRejection(id), body, { contentType: 'application/json' });
}
