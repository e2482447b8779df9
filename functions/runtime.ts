/**
 * The one Runtime of this worker process, built on first use from app settings. Validated at
 * app start (appStart hook), so a bad setting fails there, naming the setting.
 */
import { app } from '@azure/functions';

import { loadSettings } from '../shared/config/settings';
import { ConfigError } from '../shared/errors';
import { Runtime } from '../shared/runtime';

let current: Runtime | undefined;

export function runtime(): Runtime {
  if (!current) {
    const settings = loadSettings();
    if (!settings.serviceBus) {
      throw new ConfigError('ServiceBusConnection', 'is not set (nor ServiceBusConnection__fullyQualifiedNamespace): WorkDetected events cannot be published');
    }
    current = new Runtime(settings);
  }
  return current;
}

/** Lets the local host (and tests) supply a runtime built from their own settings. */
export function useRuntime(rt: Runtime | undefined): void {
  current = rt;
}

app.hook.appStart(() => {
  runtime();
});
