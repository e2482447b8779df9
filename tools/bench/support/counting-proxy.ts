/**
 * A loopback HTTP proxy in front of Azurite's blob and queue endpoints that counts every request
 * by operation (the names StorageMeter uses, and `total`), for a client the bench cannot meter from inside:
 * the .NET peers. It also records the time of each queue receive, per queue, so the bench can see
 * a listener's polling back-off from the wire.
 */
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { classify, type MeterSnapshot, type StorageService } from '../../../shared/storage/meter';
import { azuriteConnectionString } from '../../devstack/azurite';

export interface CountingProxy {
  /** Azurite's connection string with both endpoints through the proxy. */
  readonly connectionString: string;
  snapshot(): MeterSnapshot;
  /** Epoch ms of each receive (GET …/messages) per queue name, in order. */
  receives(): ReadonlyMap<string, readonly number[]>;
  close(): Promise<void>;
}

export async function startCountingProxy(target: { blobPort: number; queuePort: number }): Promise<CountingProxy> {
  const counts: MeterSnapshot = {};
  const receives = new Map<string, number[]>();
  const listen = (service: StorageService, port: number): Promise<Server> =>
    new Promise((resolve, reject) => {
      const server = createServer((req, res) => {
        const url = `http://127.0.0.1${req.url ?? '/'}`;
        const op = classify(service, {
          method: req.method ?? 'GET',
          url,
          headers: { get: (n: string) => headerOf(req.headers[n.toLowerCase()]) },
        } as never);
        counts[op] = (counts[op] ?? 0) + 1;
        counts.total = (counts.total ?? 0) + 1;
        if (op === 'queue.get') {
          const queue = new URL(url).pathname.split('/')[2] ?? '';
          receives.set(queue, [...(receives.get(queue) ?? []), Date.now()]);
        }
        const upstream = httpRequest(
          { host: '127.0.0.1', port, method: req.method, path: req.url, headers: req.headers },
          (up) => {
            res.writeHead(up.statusCode ?? 502, up.headers);
            up.pipe(res);
          },
        );
        upstream.on('error', () => res.destroy());
        req.pipe(upstream);
      });
      // Never the first to close an idle keep-alive connection: a client that reuses one just as
      // the server's 5 s default closes it gets a reset, and its retry is a second attempt the
      // meter counts and this proxy never saw (meter 36 blob.put, wire 35, beside two CPU hogs).
      server.keepAliveTimeout = 0;
      server.on('error', reject);
      server.listen(0, '127.0.0.1', () => resolve(server));
    });
  const [blob, queue] = await Promise.all([listen('blob', target.blobPort), listen('queue', target.queuePort)]);
  const portOf = (s: Server): number => (s.address() as AddressInfo).port;
  return {
    connectionString: azuriteConnectionString(portOf(blob), portOf(queue)),
    snapshot: () => ({ ...counts }),
    receives: () => receives,
    close: async () => {
      await Promise.all(
        [blob, queue].map((s) => new Promise<void>((r) => (s.closeAllConnections(), s.close(() => r())))),
      );
    },
  };
}

function headerOf(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}
