/** Starts a design under test by name. */
import type { AppOptions, BenchApp, DesignName } from './app';
import { startClassicPoller } from './baselines/classic-poller';
import { startFunctionsQueueListener } from './baselines/functions-queue-trigger';
import { startNoClaimCheck } from './baselines/no-claim-check';
import { startPollingApp } from './baselines/polling-app';
import { startPushdrain } from './pushdrain/app';

export async function startApp(design: DesignName, options: AppOptions): Promise<BenchApp> {
  switch (design) {
    case 'pushdrain': {
      const app = startPushdrain(options);
      await app.runtime.ready();
      return app;
    }
    case 'classic-poller':
      return startPollingApp({ design, listener: startClassicPoller }, options);
    case 'functions-queue':
      return startPollingApp({ design, listener: startFunctionsQueueListener }, options);
    case 'no-claim-check':
      return startNoClaimCheck(options);
  }
}
