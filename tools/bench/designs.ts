/** Starts a design under test by name. */
import { provisionStorage } from '../devstack/provision-storage';
import type { AppOptions, BenchApp, DesignName } from './app';
import { startClassicPoller } from './baselines/classic-poller';
import { startFunctionsQueueListener } from './baselines/functions-queue-trigger';
import { startNoClaimCheck } from './baselines/no-claim-check';
import { startPollingApp } from './baselines/polling-app';
import { startPushdrain } from './pushdrain/app';
import { appSettings } from './support/env';

export async function startApp(design: DesignName, options: AppOptions): Promise<BenchApp> {
  switch (design) {
    case 'pushdrain': {
      // Provisioned as infra/ provisions Azure, before the app starts: not the app's requests.
      await provisionStorage(
        appSettings({ storage: options.provisionVia ?? options.storage }, options.prefix, options.settings),
      );
      return startPushdrain(options);
    }
    case 'classic-poller':
      return startPollingApp({ design, listener: startClassicPoller }, options);
    case 'functions-queue':
      return startPollingApp({ design, listener: startFunctionsQueueListener }, options);
    case 'no-claim-check':
      return startNoClaimCheck(options);
  }
}
