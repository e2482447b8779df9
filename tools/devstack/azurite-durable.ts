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
 *
 * A database that is still loading is not waited for. LokiJS marks a loading database as saving
 * (`throttledSavePending`) and, if a save was asked for meanwhile, "resumes" saving after the load
 * with a saveDatabase() that only queues behind that flag, which nothing clears: every later save,
 * and so every held response, waited forever. A restarted Azurite met exactly that: its blob
 * service answers while its queue databases still load, and the app's writes arrive at once.
 * Its queue service then never started (its init saves), or held every dequeue and write.
 */
import http from 'node:http';

import { writeFileDurably } from './durable-write';

interface LokiDb {
  autosaveDirty(): boolean;
  throttledSavePending?: boolean;
  throttledCallbacks?: unknown[];
  saveDatabase(callback?: (err?: Error | null) => void): void;
}

interface LokiModule {
  prototype: {
    autosaveEnable: (this: LokiDb, ...args: unknown[]) => unknown;
    close: (this: LokiDb, callback?: (...args: unknown[]) => void) => unknown;
    loadDatabase: (this: LokiDb, options: unknown, callback?: (err?: unknown) => void) => unknown;
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
  /** Still loading: no request has changed them, and a save asked for now would wedge them. */
  const loading = new Set<LokiDb>();
  const autosaveEnable = Loki.prototype.autosaveEnable;
  // Only databases that persist to files autosave: those are the ones to wait for.
  Loki.prototype.autosaveEnable = function (this: LokiDb, ...args: unknown[]) {
    dbs.add(this);
    open_.add(this);
    return autosaveEnable.apply(this, args);
  };
  const loadDatabase = Loki.prototype.loadDatabase;
  Loki.prototype.loadDatabase = function (this: LokiDb, options: unknown, callback?: (err?: unknown) => void) {
    loading.add(this);
    return loadDatabase.call(this, options, (err?: unknown) => {
      loading.delete(this);
      // LokiJS leaves saves asked for during the load queued behind a flag nothing clears (see above).
      if (this.throttledSavePending === true && (this.throttledCallbacks?.length ?? 0) > 0) {
        this.throttledSavePending = false;
        this.saveDatabase();
      }
      callback?.(err);
    });
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
    if (event === 'request')
      holdUntilSaved(args[0] as http.IncomingMessage, args[1] as http.ServerResponse, dbs, loading);
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
function holdUntilSaved(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  dbs: ReadonlySet<LokiDb>,
  loading: ReadonlySet<LokiDb>,
): void {
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
        const waiting = [...dbs].filter(
          (db) => !loading.has(db) && (db.autosaveDirty() || db.throttledSavePending === true),
        );
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
