/**
 * Keep-alive agents for webhook and callback deliveries, one per endpoint origin and checked
 * address. A delivery that finds a connection open to its receiver writes the request at once:
 * no TCP (or TLS) handshake, and no wait for this process's event loop to see the connect, which
 * is most of a delivery's time when the process is busy draining. The SSRF guard still decides
 * every attempt: a connection is only reused by an attempt whose host resolved, and was checked,
 * to the very address that connection went to (the address is part of the key), so an answer
 * that changed between attempts gets a connection of its own.
 *
 * With no kept connection, `warm` opens one while the batch's terminal write is under way (to an
 * address the guard checked, sending nothing): by the time the outbox is durable and the attempt
 * starts, the handshake is done, and the attempt takes that connection.
 */
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';

import type { ResolvedAddress } from './address-guard';

/** Below Node's server default keep-alive timeout (5 s): we close an idle connection before the receiver does. */
const IDLE_SOCKET_MS = 4_000;

/** Endpoints kept at most; the least recently used one's agent is closed beyond it. */
const MAX_AGENTS = 64;

export class EndpointAgents {
  private readonly agents = new Map<string, http.Agent>();
  /** Connections `warm` opened, by agent key, not yet taken by an attempt. */
  private readonly spares = new Map<string, net.Socket>();
  /** Every connection `warm` opened (an attempt that took one may resend on it like on a kept one). */
  private readonly opened = new WeakSet<object>();

  constructor(private readonly max = MAX_AGENTS) {}

  /** The agent for `url`'s origin at the checked `address`. */
  for(url: URL, address: ResolvedAddress): http.Agent {
    const key = keyOf(url, address);
    // Re-inserted below: the map's order is the use order.
    let agent = this.agents.get(key);
    this.agents.delete(key);
    if (!agent) {
      const options = { keepAlive: true, maxFreeSockets: 4, timeout: IDLE_SOCKET_MS, scheduling: 'lifo' as const };
      agent = url.protocol === 'https:' ? new https.Agent(options) : new http.Agent(options);
      const create = agent.createConnection.bind(agent);
      // A new connection is the one `warm` opened, when it is still there.
      agent.createConnection = (opts, callback) => this.takeSpare(key) ?? create(opts, callback);
    }
    this.agents.set(key, agent);
    for (const [oldest, a] of this.agents) {
      if (this.agents.size <= this.max) break;
      this.agents.delete(oldest);
      a.destroy();
    }
    return agent;
  }

  /**
   * Opens a connection to `address` for `url` unless one is kept or already opening; sends
   * nothing on it. Closed after the kept connections' idle time if no attempt takes it.
   */
  warm(url: URL, address: ResolvedAddress): void {
    const key = keyOf(url, address);
    const agent = this.for(url, address);
    if (this.spares.has(key) || Object.values(agent.freeSockets).some((l) => (l?.length ?? 0) > 0)) return;
    const port = Number(url.port) || (url.protocol === 'https:' ? 443 : 80);
    const socket =
      url.protocol === 'https:'
        ? tls.connect({
            host: address.address,
            port,
            ...(net.isIP(url.hostname.replace(/^\[|\]$/g, '')) ? {} : { servername: url.hostname }),
          })
        : net.connect({ host: address.address, port });
    // An attempt that takes it sees its errors; one nobody takes just goes.
    socket.on('error', () => undefined);
    socket.unref();
    this.opened.add(socket);
    this.spares.set(key, socket);
    setTimeout(() => {
      if (this.spares.get(key) !== socket) return;
      this.spares.delete(key);
      socket.destroy();
    }, IDLE_SOCKET_MS).unref();
  }

  /** True for a connection `warm` opened: a request on it may meet a receiver that closed it, as on a kept one. */
  wasWarmed(socket: object | null | undefined): boolean {
    return socket !== null && socket !== undefined && this.opened.has(socket);
  }

  private takeSpare(key: string): net.Socket | undefined {
    const socket = this.spares.get(key);
    this.spares.delete(key);
    if (!socket || socket.destroyed || socket.readyState === 'closed') return undefined;
    socket.ref();
    return socket;
  }

  /** Agents kept now (tests). */
  get size(): number {
    return this.agents.size;
  }

  /** Closes every kept connection (app shutdown). */
  close(): void {
    for (const a of this.agents.values()) a.destroy();
    this.agents.clear();
    for (const s of this.spares.values()) s.destroy();
    this.spares.clear();
  }
}

function keyOf(url: URL, address: ResolvedAddress): string {
  return `${url.protocol}//${url.host}@${address.address}`;
}
