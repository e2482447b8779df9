/** What a caller of composeApp may supply instead of what settings would build. */
import type { BusPublisher } from '../bus/bus-publisher';
import type { HostLookup } from '../events/address-guard';
import type { BusInspector } from '../notify/inspection';
import type { Clock, Logger } from '../ports';
import type { ScaleTarget } from '../scale/target';
import type { StorageMeter } from '../storage/meter';
import type { Telemetry } from '../telemetry/telemetry';

export interface AppOptions {
  /** @defaultValue Service Bus from settings.serviceBus */
  publisher?: BusPublisher;
  /** false: an app deployed without the `batch-events` topic (a bench variant). @defaultValue true with Service Bus */
  batchEventsTopic?: false;
  /** @defaultValue the system clock */
  clock?: Clock;
  /** @defaultValue the console */
  log?: Logger;
  /** @defaultValue a new meter */
  meter?: StorageMeter;
  /** @defaultValue peeks on Service Bus from settings.serviceBus (none without it) */
  inspector?: BusInspector;
  /** @defaultValue the management API for settings.scale.site (tests pass one on a local endpoint) */
  scaleTarget?: ScaleTarget;
  /** How callback hosts resolve before each delivery. @defaultValue the system resolver */
  lookup?: HostLookup;
  /** Started before the app (start-telemetry.ts). @defaultValue NO_TELEMETRY */
  telemetry?: Telemetry;
}
