/**
 * A polling deployment of the same pipeline: the same app (storage clients, ingest (POST
 * handler), chunk blobs, pointers, MapProcessor and ReduceProcessor as pushdrain), but no
 * Service Bus and no drainer. Instead one listener per queue (each input partition and the
 * results queue) polls for as long as the app runs.
 */
import { PushdrainApp } from '../../../shared/app';
import type { AppParts } from '../../../shared/compose/app-parts';
import { composeApp } from '../../../shared/create-app';
import type { MessageProcessor, QueueMessage } from '../../../shared/ports';
import { createStorageClients } from '../../../shared/storage/clients';
import { StorageMeter } from '../../../shared/storage/meter';
import { provisionStorage } from '../../devstack/provision-storage';
import type { AppOptions, BenchApp, DesignName } from '../app';
import { appSettings } from '../support/env';
import { benchLog } from '../support/log';
import { NullPublisher } from '../support/null-publisher';
import { postNdjson } from '../support/submit';
import type { Listener, ListenerDeps } from './listener';

type ListenerFactory = (deps: ListenerDeps) => Listener;

export interface PollingDesign {
  design: DesignName;
  listener: ListenerFactory;
  /** The map step; defaults to pushdrain's MapProcessor (chunk pointers). */
  map?: (parts: AppParts) => MessageProcessor;
  /** How a batch enters; defaults to the POST /api/batches handler. */
  submit?: (parts: AppParts, body: Buffer) => Promise<string>;
}

/** Wraps the map step so each message it finishes notifies the results listener. */
function notifying(processor: MessageProcessor, after: () => void): MessageProcessor {
  return {
    process: async (m: QueueMessage) => {
      await processor.process(m);
      after();
    },
    ...(processor.onPoison ? { onPoison: (m: QueueMessage, reason: string) => processor.onPoison!(m, reason) } : {}),
  };
}

export async function startPollingApp(spec: PollingDesign, options: AppOptions): Promise<BenchApp> {
  const settings = appSettings({ storage: options.storage }, options.prefix);
  const meter = options.meter ?? new StorageMeter();
  const parts = composeApp(settings, { publisher: new NullPublisher(), meter, log: benchLog });
  const runtime = new PushdrainApp(parts);
  await provisionStorage(appSettings({ storage: options.provisionVia ?? options.storage }, options.prefix));
  const {
    names,
    settings: { tuning },
    queues,
    reduce,
  } = parts;
  // Releasing a message early (visibility 0) is a baseline's own move; no port offers it. Same meter.
  const sdk = createStorageClients(settings.storage, meter).queues;
  const random = options.random ?? Math.random;
  const listen = (name: string, processor: MessageProcessor, idleMs: number | undefined): Listener => {
    const client = sdk.getQueueClient(name);
    return spec.listener({
      queue: queues.queue(name),
      processor,
      log: benchLog,
      maxDequeueCount: tuning.maxDequeueCount,
      random,
      release: async (id, popReceipt) => {
        await client.updateMessage(id, popReceipt, undefined, 0);
      },
      ...(idleMs !== undefined ? { idleMs } : {}),
    });
  };
  const mapStep = spec.map ? spec.map(parts) : parts.map;
  /** By queue name. */
  let listeners = new Map<string, Listener>();
  const startListeners = (idleMs: number | undefined): void => {
    const results = listen(names.resultsQueue, reduce, idleMs);
    const map = notifying(mapStep, () => results.notify());
    listeners = new Map([
      [names.resultsQueue, results],
      ...names.inputQueues().map((q): [string, Listener] => [q, listen(q, map, idleMs)]),
    ]);
  };
  const stopListeners = async (): Promise<void> => {
    await Promise.all([...listeners.values()].map((l) => l.stop()));
    listeners = new Map();
  };
  startListeners(options.idleMs);
  return {
    design: spec.design,
    settings,
    runtime,
    meter,
    submit: (body) => (spec.submit ? spec.submit(parts, body) : postNdjson(runtime, body)),
    sent: () => 0,
    inFlight: () => inFlightText(listeners),
    restartIdle: async (idleMs) => {
      await stopListeners();
      startListeners(idleMs);
    },
    stop: async () => {
      await stopListeners();
      await runtime.close();
    },
  };
}

/** `queue: id (held 118 s), …` for every message a listener holds unsettled; `none` when it holds none. */
function inFlightText(listeners: ReadonlyMap<string, Listener>): string {
  const held = [...listeners].flatMap(([queue, l]) =>
    l.inFlight().map(({ id, ms }) => `${queue}: ${id} (held ${Math.round(ms / 1000)} s)`),
  );
  return held.join(', ') || 'none';
}
