/**
 * One running deployment of a design under test. Every design takes batches the same way (an
 * NDJSON body, as POST /api/batches would carry it) and records completion on the same
 * manifest, so the scenarios drive them all through this one interface.
 */
import type { PushdrainApp } from '../../shared/app';
import type { Settings } from '../../shared/config/settings';
import type { StorageMeter } from '../../shared/storage/meter';
import type { Telemetry } from '../../shared/telemetry/telemetry';

export const DESIGNS = ['pushdrain', 'classic-poller', 'functions-queue', 'no-claim-check'] as const;
export type DesignName = (typeof DESIGNS)[number];

export const BASELINES = DESIGNS.filter((d) => d !== 'pushdrain');

export const DESIGN_TITLES: Record<DesignName, string> = {
  pushdrain: 'pushdrain',
  'classic-poller': 'classic poller (1 s, batch 32)',
  'functions-queue': 'Functions queue trigger, port (batch 16, 100 ms–60 s)',
  'no-claim-check': 'no claim-check (1 message per transaction)',
};

/** pushdrain's Service Bus-triggered functions. */
export type PushdrainTrigger = 'drain' | 'aggregate' | 'scaleAgent';

export interface BenchApp {
  readonly design: DesignName;
  readonly settings: Settings;
  readonly runtime: PushdrainApp;
  /** The app's own storage transactions (the scenario's reads go through another client). */
  readonly meter: StorageMeter;
  /** Submits one batch as POST /api/batches would; resolves with its batchId once answered 202. */
  submit(body: Buffer): Promise<string>;
  /** Messages this app has sent to Service Bus so far (events and scheduled checks); baselines send none. */
  sent(): number;
  /**
   * Baselines only: restart the pollers in the state `idleMs` of idle would leave them in (see
   * baselines/functions-backoff.ts), instead of waiting that long. pushdrain has no pollers.
   */
  restartIdle?(idleMs: number): Promise<void>;
  /**
   * Baselines only: the messages their listeners received and have not settled. When a batch stalls,
   * this tells a hung invocation (held) from a message no listener holds.
   */
  inFlight?(): string;
  /** pushdrain: writes each batch's usage still waiting for its manifest write (before the bench reads it). */
  flushUsage?(): Promise<void>;
  stop(): Promise<void>;
}

export interface AppOptions {
  prefix: string;
  storage: string;
  /**
   * The connection the app's queues and containers are created through before it starts, as infra/
   * creates them in Azure: not the app's requests, so not the counted wire. @defaultValue storage
   */
  provisionVia?: string;
  /** pushdrain only: broker connection and the topic copy this app owns. */
  serviceBus?: { connectionString: string; topic: string };
  meter?: StorageMeter;
  /** Start the pollers already in the idle state they would reach after this long (baselines). */
  idleMs?: number;
  random?: () => number;
  /** pushdrain only: spans and metrics (the telemetry-cost scenario). @defaultValue NO_TELEMETRY */
  telemetry?: Telemetry;
  /** pushdrain only: more app settings, by their environment names (the webhooks scenario's). */
  settings?: Record<string, string>;
  /** pushdrain only: no `batch-events` topic delivery (trickle measures the app with and without it). */
  withoutBatchEvents?: boolean;
  /**
   * pushdrain only: the Service Bus triggers this instance runs; none is an instance that only takes
   * HTTP (Flex Consumption scales HTTP and each of these apart). @defaultValue all three
   */
  functions?: readonly PushdrainTrigger[];
}
