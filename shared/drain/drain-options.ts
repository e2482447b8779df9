import type { Tuning } from '../config/settings';
import { perMessagesRule } from './task-count';
import type { TaskOptions } from './task-group';

export interface DrainOptions extends Omit<TaskOptions, 'deadline'> {
  /** How long one wake-up may take work, in ms (stop before the function timeout). */
  budgetMs: number;
}

/** The drain options that follow from the settings; `signal` is the host's shutdown. */
export function drainOptions(tuning: Tuning, signal?: AbortSignal): DrainOptions {
  return {
    batchSize: tuning.dequeueBatchSize,
    visibilityTimeoutSeconds: tuning.visibilityTimeoutSeconds,
    minIdleMs: tuning.minIdleMs,
    maxIdleMs: tuning.maxIdleMs,
    maxTasks: tuning.maxDequeueTasks,
    maxDequeueCount: tuning.maxDequeueCount,
    budgetMs: tuning.drainBudgetSeconds * 1000,
    taskCount: perMessagesRule(tuning.messagesPerTask, tuning.maxDequeueTasks),
    ...(signal ? { signal } : {}),
  };
}
