/**
 * A free port below Linux's ephemeral range (32768 and up), for a port a test names before it
 * is bound, or while it is not: a killed host or a supervised Azurite restarted on it, a receiver
 * opened on it later, a port where nothing may listen. A port the OS handed out for port 0 goes
 * back to that range when its owner lets go: until it is bound again, any port-0 listener of a
 * test file running alongside, or an outgoing connection, can take it (a restart then fails with
 * EADDRINUSE). Nothing takes a port from below the range unless it asks for it by number.
 */
import { createServer } from 'node:net';

export async function portBelowEphemeral(): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const free = await new Promise<boolean>((resolve) => {
      const s = createServer();
      s.once('error', () => resolve(false));
      s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error('no free port between 20000 and 32000 after 50 tries');
}
