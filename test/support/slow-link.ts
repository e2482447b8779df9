/**
 * A loopback TCP pass-through with a bandwidth cap, and a switch that freezes one response
 * mid-body: what a slow network and a connection that dies after its headers look like to a
 * client. (The fault proxy's `stall` holds a request before anything is answered.)
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

export interface SlowLink {
  readonly port: number;
  /** TCP connections accepted so far. */
  readonly connections: number;
  /** The next connection forwards this many response bytes, then holds the rest until the client gives up. */
  freezeNextResponseAfter(bytes: number): void;
  /** Closes every open connection (so a client's next request opens a new one). */
  dropConnections(): void;
  close(): Promise<void>;
}

export interface SlowLinkOptions {
  /** Cap per direction and connection. @defaultValue unlimited */
  bytesPerSecond?: number;
}

const SLICE = 16 * 1024;

export async function startSlowLink(targetPort: number, options: SlowLinkOptions = {}): Promise<SlowLink> {
  const sockets = new Set<Socket>();
  let connections = 0;
  let freezeAfter: number | undefined;
  const server: Server = createServer((client) => {
    connections++;
    const frozenAfter = freezeAfter;
    freezeAfter = undefined;
    const upstream = connect(targetPort, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.once('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    }
    client.once('close', () => upstream.destroy());
    upstream.once('close', () => client.destroy());
    pump(client, upstream, options.bytesPerSecond, undefined);
    pump(upstream, client, options.bytesPerSecond, frozenAfter);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    port,
    get connections() {
      return connections;
    },
    freezeNextResponseAfter: (bytes) => void (freezeAfter = bytes),
    dropConnections: () => {
      for (const s of sockets) s.destroy();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Copies `from` to `to` in slices at the given rate; past `freezeAfter` bytes it forwards nothing more. */
function pump(from: Socket, to: Socket, bytesPerSecond: number | undefined, freezeAfter: number | undefined): void {
  let sent = 0;
  let frozen = false;
  let queue = Promise.resolve();
  from.on('data', (chunk: Buffer) => {
    from.pause();
    queue = queue.then(async () => {
      for (let at = 0; at < chunk.length && !to.destroyed; at += SLICE) {
        let slice = chunk.subarray(at, at + SLICE);
        if (freezeAfter !== undefined) slice = slice.subarray(0, Math.max(0, freezeAfter - sent));
        if (slice.length === 0) {
          frozen = true; // keep the connection open, forward nothing
          return;
        }
        sent += slice.length;
        if (bytesPerSecond) await new Promise((r) => setTimeout(r, (slice.length / bytesPerSecond) * 1000));
        to.write(slice);
      }
      from.resume();
    });
  });
  from.once('end', () => void queue.then(() => !frozen && to.end()));
}
