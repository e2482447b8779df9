/**
 * The development AMQP 1.0 broker: a small Service Bus stand-in on rhea that the unmodified
 * `@azure/service-bus` SDK talks to over plain TCP (wire facts: tools/devstack/servicebus/README.md).
 */
import { createServer, type Server, type Socket } from 'node:net';

import { type Connection, create_container, type EventContext } from 'rhea';

import { type EntitiesConfig, loadEntitiesConfig, validateEntities } from './config';
import { EntityRegistry } from './entities';
import { FaultState, type FaultSwitches } from './faults';
import { type DurableJournal, type JournalStats, JournalSwitch } from './journal';
import { LinkRouter } from './link-router';
import { DEFAULT_COMPACT_AT_BYTES, openPersistence } from './persistence';
import { acceptServerConnection } from './rhea-internals';
import { Stats, type StatsSnapshot } from './stats';
import { Timers } from './timers';

export interface BrokerOptions {
  /** TCP port; 0 picks a free one. @defaultValue 0 */
  port?: number;
  /** Entities to serve. @defaultValue the repo's infra/servicebus-entities.json */
  entities?: EntitiesConfig;
  /** Diagnostic lines. @defaultValue silent */
  log?: (line: string) => void;
  /**
   * Folder for the durable journal: every send, schedule and settlement is on disk (fsync)
   * before it is acknowledged, and a restart finds every message. @defaultValue in memory only
   */
  dataDir?: string;
  /** Compact the journal once it passes this size. @defaultValue 4 MiB */
  compactAtBytes?: number;
  /** Lines a user should see: what start-up restored, a cut journal tail, a failed write. @defaultValue console.log */
  notice?: (line: string) => void;
  /** The journal could not write (disk full, I/O error): the broker acknowledges nothing more. @defaultValue notice only */
  onFatal?: (err: Error) => void;
}

export interface Broker {
  readonly port: number;
  /** Loopback addresses only (127.0.0.1, and ::1 where the host has IPv6): it accepts any token. */
  readonly addresses: readonly string[];
  /** Endpoint=sb://localhost:PORT;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true; */
  readonly connectionString: string;
  readonly faults: FaultSwitches;
  /** Operation counts by kind (a `Record<string, number>` whose known kinds are always present). */
  stats(): StatsSnapshot;
  /**
   * Message counts of a queue or subscription (`topic/Subscriptions/sub`): available, locked
   * (delivered, not settled) and deferred. Service Bus's ActiveMessageCount is available + locked.
   */
  counts(entityPath: string): { available: number; locked: number; deferred: number } | undefined;
  /** Scheduled messages of a queue or topic that are not enqueued yet. */
  scheduledCount(entityPath: string): number | undefined;
  resetStats(): void;
  /** Journal figures, or undefined for an in-memory broker. */
  journal(): JournalStats | undefined;
  stop(): Promise<void>;
}

function connectionStringFor(port: number): string {
  return `Endpoint=sb://localhost:${port};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true;`;
}

export async function startBroker(options: BrokerOptions = {}): Promise<Broker> {
  const log = options.log ?? ((): void => undefined);
  const entities = options.entities ? validateEntities(options.entities) : loadEntitiesConfig();
  const timers = new Timers();
  const stats = new Stats();
  const faults = new FaultState();
  const now = (): number => Date.now();
  const journal = new JournalSwitch();
  const registry = new EntityRegistry(entities, { timers, stats, now, journal });
  const notice = options.notice ?? ((line: string): void => console.log(line));
  let durable: DurableJournal | undefined;
  if (options.dataDir !== undefined) {
    durable = openPersistence(registry, journal, {
      dir: options.dataDir,
      compactAtBytes: options.compactAtBytes ?? DEFAULT_COMPACT_AT_BYTES,
      notice,
      onFatal:
        options.onFatal ??
        ((err) => notice(`servicebus: journal write failed, nothing more is acknowledged: ${err.message}`)),
    });
  }
  // Whatever a client can see waits until the changes before it are durable.
  const later = (fn: () => void): void =>
    journal.afterDurable(() => {
      const ms = faults.latencyMs;
      if (ms === 0) fn();
      else timers.after(ms, fn);
    });
  const router = new LinkRouter({ registry, faults, stats, now, log, later });

  const container = create_container({ id: 'pushdrain-dev-broker' });
  const mechanisms = container.sasl_server_mechanisms as SaslServerMechanisms;
  mechanisms.enable_anonymous();
  mechanisms.enable_plain(() => true);
  // The .NET client (Microsoft.Azure.Amqp) offers only Service Bus's own mechanism, MSSBCBS: it
  // carries no credentials, because the token follows on $cbs, so it is accepted as it comes.
  mechanisms.MSSBCBS = () => ({ outcome: true, username: 'MSSBCBS', start: () => undefined });
  router.install(container);
  container.on('connection_close', (ctx: EventContext) => router.forgetConnection(ctx.connection));
  container.on('disconnected', (ctx: EventContext) => router.forgetConnection(ctx.connection));
  // Without these, rhea rethrows a client's link or connection error as an uncaught 'error'.
  container.on('error', (err: unknown) => log(`amqp error: ${String(err)}`));
  container.on('protocol_error', (err: unknown) => log(`amqp protocol error: ${String(err)}`));

  const sockets = new Map<Socket, Connection>();
  const onSocket = (socket: Socket): void => {
    if (faults.outage) return void socket.resetAndDestroy(); // an unreachable namespace: TCP RST
    stats.inc('connections');
    const connection = acceptServerConnection(container, socket, `conn-${stats.snapshot().connections}`);
    sockets.set(socket, connection);
    socket.on('close', () => {
      sockets.delete(socket);
      router.forgetConnection(connection);
    });
  };
  let servers: LoopbackServers;
  try {
    servers = await listenOnLoopback(onSocket, options.port ?? 0);
  } catch (e) {
    await journal.close();
    throw e;
  }
  const port = servers.port;
  log(`development Service Bus broker listening on port ${port}`);

  const dropConnections = (): void => {
    // destroy(err) reaches rhea's 'error' handler, which clears its heartbeat timers.
    for (const socket of sockets.keys()) socket.destroy(new Error('connection dropped by fault injection'));
  };
  let stopping: Promise<void> | undefined;

  return {
    port,
    addresses: servers.addresses,
    connectionString: connectionStringFor(port),
    faults: {
      serverBusy: (n) => faults.setServerBusy(n),
      detach: (entityPath) => void router.detach(entityPath),
      dropConnections,
      setLatency: (ms) => faults.setLatency(ms),
      dropSends: (entityPath) => {
        if (entityPath !== undefined && !registry.sendTarget(entityPath)) {
          throw new RangeError(`dropSends(entityPath): no queue or topic named "${entityPath}"`);
        }
        faults.setDrop(entityPath);
      },
      outage: (on) => {
        faults.outage = on;
        if (on) dropConnections();
      },
      refuseAttach: (entityPath, kind) => {
        faults.attach.set(entityPath, kind);
        if (kind) router.detach(entityPath); // live links go too, as when an entity is disabled or deleted
      },
      reset: () => faults.reset(),
    },
    stats: () => stats.snapshot(),
    counts: (entityPath) => {
      const c = registry.receiveEntity(entityPath)?.store.counts();
      return c ? { available: c.active, locked: c.locked, deferred: c.deferred } : undefined;
    },
    scheduledCount: (entityPath) => registry.sendTarget(entityPath)?.scheduledCount,
    resetStats: () => stats.reset(),
    journal: () => durable?.stats(),
    stop: () => {
      stopping ??= new Promise<void>((resolve) => {
        timers.stop();
        servers.close(resolve);
        dropConnections();
      }).then(() => journal.close());
      return stopping;
    },
  };
}

/** rhea's server-side SASL table: mechanism name → a factory of `{start, outcome, username}`. */
interface SaslServerMechanisms {
  enable_anonymous(): void;
  enable_plain(cb: () => boolean): void;
  [mechanism: string]: unknown;
}

interface LoopbackServers {
  port: number;
  /** The addresses actually bound, as the OS reports them. */
  addresses: string[];
  close(done: () => void): void;
}

/**
 * Loopback only: the broker accepts any token, so it must never be reachable from the network.
 * `localhost` (the connection string's host) may resolve to ::1 first, so the same port is also
 * served on ::1 where the host has IPv6.
 */
async function listenOnLoopback(onSocket: (socket: Socket) => void, port: number): Promise<LoopbackServers> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await listenOnBoth(onSocket, port);
    } catch (err) {
      // An ephemeral port free on 127.0.0.1 but taken on ::1: pick another.
      if (port !== 0 || attempt >= 5 || (err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    }
  }
}

async function listenOnBoth(onSocket: (socket: Socket) => void, port: number): Promise<LoopbackServers> {
  const v4 = createServer(onSocket);
  const bound = await listenOn(v4, port, '127.0.0.1');
  const all: Server[] = [v4];
  const v6 = createServer(onSocket);
  try {
    await listenOn(v6, bound, '::1');
    all.push(v6);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EAFNOSUPPORT' && code !== 'EADDRNOTAVAIL') {
      v4.close();
      throw err;
    }
  }
  return {
    port: bound,
    addresses: all.map((srv) => {
      const a = srv.address();
      return typeof a === 'object' && a ? a.address : String(a);
    }),
    close(done): void {
      let open = all.length;
      for (const s of all) s.close(() => --open === 0 && done());
    },
  };
}

function listenOn(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error): void => reject(err);
    server.once('error', onError);
    server.listen({ port, host }, () => {
      server.off('error', onError);
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : port);
    });
  });
}
