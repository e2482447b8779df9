/**
 * The one application of this worker process, built on first use from app settings.
 * Validated at app start (appStart hook), so a bad setting fails there, naming the setting.
 */
import { app } from '@azure/functions';

import type { PushdrainApp } from '../shared/app';
import { loadSettings } from '../shared/config/settings';
import { createApp } from '../shared/create-app';
import { ConfigError } from '../shared/errors';
import { NO_TELEMETRY, type Telemetry } from '../shared/telemetry/telemetry';
import { workerTelemetry } from './telemetry';

let current: PushdrainApp | undefined;
let telemetry: Telemetry = NO_TELEMETRY;

export function pushdrainApp(): PushdrainApp {
  if (!current) {
    const settings = loadSettings();
    if (!settings.serviceBus) {
      throw new ConfigError(
        'ServiceBusConnection',
        'is not set (nor ServiceBusConnection__fullyQualifiedNamespace): WorkDetected events cannot be published',
      );
    }
    current = createApp(settings, { telemetry });
  }
  return current;
}

app.hook.appStart(async () => {
  telemetry = await workerTelemetry();
  pushdrainApp();
});

// A scale-in stops the worker: continuations of queues that are empty by now are cancelled
// first, so they do not start an instance for nothing later (docs/DESIGN.md).
app.hook.appTerminate(async () => {
  await current?.cancelIdleContinuations();
  // What is buffered (spans of the last batches, the last metric interval) goes out before exit.
  await telemetry.shutdown();
});
