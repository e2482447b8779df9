/**
 * Telemetry for the worker process: started once, from the standard variables, before the app
 * is built (appStart waits for it). Off unless APPLICATIONINSIGHTS_CONNECTION_STRING or an OTLP
 * endpoint is set (shared/config/telemetry-settings.ts), and then nothing of OpenTelemetry is loaded. On, the
 * Azure Functions instrumentation carries the host's trace context into every handler and
 * tells the host that this worker sends its own logs (no duplicates).
 */
import * as azureFunctions from '@azure/functions';

import { telemetrySettings } from '../shared/config/telemetry-settings';
import { startTelemetry } from '../shared/telemetry/start-telemetry';
import { NO_TELEMETRY, type Telemetry } from '../shared/telemetry/telemetry';

type AzureFunctions = typeof azureFunctions;

/**
 * The capability must be declared before the worker reports its capabilities (right after the
 * entry points load), which can come before the SDKs finish loading: declared here, at once.
 */
function declareWorkerTelemetry(): void {
  azureFunctions.app.setup({ capabilities: { WorkerOpenTelemetryEnabled: true } });
}

/** Applies @azure/functions-opentelemetry-instrumentation to this module's `app` (its hooks). */
async function instrumentFunctions(): Promise<void> {
  // A webpack bundle: import() of it sees only its `default` (module.exports), not named exports.
  const loaded = await import('@azure/functions-opentelemetry-instrumentation');
  const { AzureFunctionsInstrumentation } = loaded.default;
  // Disabled: it would wait for the next require of @azure/functions, which has already happened.
  const instrumentation = new AzureFunctionsInstrumentation({ enabled: false });
  // Its setup call repeats the capability declared above, which may by now be locked.
  const once: AzureFunctions = {
    ...azureFunctions,
    app: {
      ...azureFunctions.app,
      setup: () => {},
    },
  };
  for (const definition of instrumentation.getModuleDefinitions()) definition.patch?.(once);
}

async function start(): Promise<Telemetry> {
  const settings = telemetrySettings();
  if (settings.kind === 'off') return NO_TELEMETRY;
  declareWorkerTelemetry();
  const telemetry = await startTelemetry(settings);
  await instrumentFunctions();
  return telemetry;
}

const started = start();
// Kept for appStart, which reports a bad setting by name; no unhandled rejection meanwhile.
started.catch(() => {});

export function workerTelemetry(): Promise<Telemetry> {
  return started;
}
