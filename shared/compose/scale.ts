/** The scaling agent: the load signal's consumer, with its state and its target (ARM, or a test's). */
import { FUNCTION_NAMES } from '../names';
import { ScaleAgent } from '../scale/agent';
import { lazyArmScaleTarget } from '../scale/arm-target';
import { ScaleStateStore } from '../scale/state';
import { credentialFor } from '../storage/clients';
import type { AppCore } from './core';

export function composeScaleAgent({
  settings,
  options,
  blobs,
  queues,
  names,
  notifier,
  clock,
  log,
}: AppCore): ScaleAgent {
  return new ScaleAgent({
    settings: settings.scale,
    store: new ScaleStateStore(blobs),
    depth: async () => (await Promise.all(names.inputQueues().map((q) => queues.depth(q)))).reduce((a, b) => a + b, 0),
    target:
      options.scaleTarget ??
      lazyArmScaleTarget(settings.scale, FUNCTION_NAMES.drain, () => credentialFor(settings.scale.identity)),
    scheduleCheck: (delayMs) => notifier.scheduleScaleCheck(delayMs),
    clock,
    log,
  });
}
