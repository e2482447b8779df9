/**
 * Patches for the Azurite child (tools/devstack/azurite-child.ts), applied before Azurite loads, when it
 * persists to a folder. Azurite fdatasyncs blob bytes (extent files) before it answers, but keeps
 * its metadata (containers, blobs, queues and their messages) in LokiJS databases that it saves
 * every 5 s, with no fsync. An answered write could live only in memory for up to 5 s. So:
 * - a response to a request that may have changed metadata is held until every changed
 *   database is saved (requests that arrive during a save share the next one: LokiJS queues
 *   saves behind the one in progress);
 * - a save is fsynced before its rename, and the folder after it, so "saved" means on disk;
 * - `onClosed` fires once Azurite's shutdown has closed (and so saved) every database.
 */
import http from 'node:http';

import { writeFileDurably } from './durable-write';

interface LokiDb {
  autosaveDirty(): boolean;
  throttledSavePending?: boolean;
  saveDatabase(callback: (err?: Error | null) => void): void;
}

interface LokiModule {
  prototype: {
    autosaveEnable: (this: LokiDb, ...args: unknown[]) => unknown;
    close: (this: LokiDb, callback?: (...args: unknown[]) => void) => unknown;
  };
  LokiFsAdapter: {
    prototype: { saveDatabase: (file: string, data: string, callback: (err?: Error | null) => void) => void };
  };
}

type Held = 'writeHead' | 'write' | 'end' | 'flushHeaders';
const HELD: readonly Held[] = ['writeHead', 'write', 'end', 'flushHeaders'];

export function installDurableSaves(lokiPath: string, onClosed: () => void): void {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const Loki = require(lokiPath) as LokiModule;
  const dbs = new Set<LokiDb>();
  const open_ = new Set<LokiDb>();
  const autosaveEnable = Loki.prototype.autosaveEnable;
  // Only databases that persist to files autosave: those are the ones to wait for.
  Loki.prototype.autosaveEnable = function (this: LokiDb, ...args: unknown[]) {
    dbs.add(this);
    open_.add(this);
    return autosaveEnable.apply(this, args);
  };
  const close = Loki.prototype.close;
  Loki.prototype.close = function (this: LokiDb, callback?: (...args: unknown[]) => void) {
    return close.call(this, (...args: unknown[]) => {
      callback?.(...args);
      if (open_.delete(this) && open_.size === 0) onClosed();
    });
  };
  Loki.LokiFsAdapter.prototype.saveDatabase = (file, data, callback) =>
    void writeFileDurably(file, data, '~').then(() => callback(null), callback);

  // Wrapped, and called with the server as `this`.
  // eslint-disable-next-line @typescript-eslint/unbound-method
  const emit = http.Server.prototype.emit as (this: http.Server, event: string | symbol, ...args: unknown[]) => boolean;
  http.Server.prototype.emit = function (this: http.Server, event: string | symbol, ...args: unknown[]): boolean {
    if (event === 'request') holdUntilSaved(args[0] as http.IncomingMessage, args[1] as http.ServerResponse, dbs);
    return emit.call(this, event, ...args);
  };
}

/** Writes, then dequeues (a GET on `…/messages` that is not a peek): what may change metadata. */
function mayChange(req: http.IncomingMessage): boolean {
  const method = req.method ?? 'GET';
  if (method !== 'GET' && method !== 'HEAD' && method !== 'OPTIONS') return true;
  const url = req.url ?? '';
  return method === 'GET' && /\/messages(\?|$)/.test(url) && !/[?&]peekonly=true/i.test(url);
}

/** The response's first byte waits until the databases are saved; a failed save answers nothing. */
function holdUntilSaved(req: http.IncomingMessage, res: http.ServerResponse, dbs: Set<LokiDb>): void {
  if (!mayChange(req)) return;
  let state: 'first' | 'holding' | 'passing' = 'first';
  const queued: (() => void)[] = [];
  const target = res as unknown as Record<Held, (...args: unknown[]) => unknown>;
  const originals = Object.fromEntries(HELD.map((m) => [m, target[m]])) as Record<
    Held,
    (...args: unknown[]) => unknown
  >;
  const release = (err: Error | undefined): void => {
    state = 'passing';
    if (err) {
      res.destroy(err); // never acknowledge a write that is not on disk
      return;
    }
    for (const call of queued.splice(0)) call();
  };
  for (const m of HELD) {
    target[m] = (...args: unknown[]): unknown => {
      if (state === 'first') {
        const waiting = [...dbs].filter((db) => db.autosaveDirty() || db.throttledSavePending === true);
        state = waiting.length === 0 ? 'passing' : 'holding';
        let left = waiting.length;
        let failure: Error | undefined;
        for (const db of waiting) {
          db.saveDatabase((err) => {
            failure ??= err ?? undefined;
            if (--left === 0) release(failure);
          });
        }
      }
      if (state === 'passing') return originals[m].apply(res, args);
      queued.push(() => void originals[m].apply(res, args));
      return m === 'write' ? true : res;
    };
  }
}
