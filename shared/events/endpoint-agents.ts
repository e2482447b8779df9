/**
 * Keep-alive agents for webhook and callback deliveries, one per endpoint origin and checked
 * address. A delivery that finds a connection open to its receiver writes the request at once:
 * no TCP (or TLS) handshake, and no wait for this process's event loop to see the connect, which
 * is most of a delivery's time when the process is busy draining. The SSRF guard still decides
 * every attempt: a connection is only reused by an attempt whose host resolved, and was checked,
 * to the very address that connection went to (the address is part of the key), so an answer
 * that changed between attempts gets a connection of its own.
 */
import http from 'node:http';
import https from 'node:https';

import type { ResolvedAddress } from './address-guard';

/** Below Node's server default keep-alive timeout (5 s): we close an idle connection before the receiver does. */
const IDLE_SOCKET_MS = 4_000;

/** Endpoints kept at most; the least recently used one's agent is closed beyond it. */
const MAX_AGENTS = 64;

export class EndpointAgents {
  private readonly agents = new Map<string, http.Agent>();

  constructor(private readonly max = MAX_AGENTS) {}

  /** The agent for `url`'s origin at the checked `address`. */
  for(url: URL, address: ResolvedAddress): http.Agent {
    const key = `${url.protocol}//${url.host}@${address.address}`;
    let agent = this.agents.get(key);
    if (agent)
      this.agents.delete(key); // re-inserted below: the map's order is the use order
    else {
      const options = { keepAlive: true, maxFreeSockets: 4, timeout: IDLE_SOCKET_MS, scheduling: 'lifo' as const };
      agent = url.protocol === 'https:' ? new https.Agent(options) : new http.Agent(options);
    }
    this.agents.set(key, agent);
    for (const [oldest, a] of this.agents) {
      if (this.agents.size <= this.max) break;
      this.agents.delete(oldest);
      a.destroy();
    }
    return agent;
  }

  /** Agents kept now (tests). */
  get size(): number {
    return this.agents.size;
  }

  /** Closes every kept connection (app shutdown). */
  close(): void {
    for (const a of this.agents.values()) a.destroy();
    this.agents.clear();
  }
}
