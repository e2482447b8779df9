/**
 * The development broker as the secondary namespace: only the backlog queues, each with the
 * properties in infra/servicebus-backlog-queue.json (what infra/ provisions in Azure).
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

import { backlogQueues } from '../../../shared/names';
import { type EntitiesConfig, findEntitiesFile, type QueueConfig, validateEntities } from './config';

const BACKLOG_QUEUE_FILE = 'servicebus-backlog-queue.json';

/** `count` backlog queues, validated like any other entity list. */
export function backlogEntities(
  count: number,
  file: string = join(dirname(findEntitiesFile()), BACKLOG_QUEUE_FILE),
): EntitiesConfig {
  const template = JSON.parse(readFileSync(file, 'utf8')) as Omit<QueueConfig, 'name'> & { $comment?: string };
  const { $comment: _, ...properties } = template;
  return validateEntities({ queues: backlogQueues(count).map((name) => ({ ...properties, name })) });
}
