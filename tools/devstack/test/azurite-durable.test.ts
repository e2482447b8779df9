/**
 * The embedded Azurite's durable saves (tools/devstack/azurite-durable.ts) with the real LokiJS
 * that Azurite loads: a response held for a save must never wait on a database that is still
 * loading. A restarted Azurite answers blob requests while its queue databases load; a save asked
 * of a loading database wedged LokiJS's save queue for good, so the queue service never started
 * or held every dequeue and write, and the app's Storage requests made no progress.
 *
 * This file patches LokiJS and http.Server in its own process (node --test runs one per file).
 */
import assert from 'node:assert/strict';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { scratchDir } from '../../../test/support/scratch-dir';
import { installDurableSaves } from '../azurite-durable';

interface Db {
  addCollection(name: string): { insert(doc: object): unknown };
  loadDatabase(options: object, callback: (err?: unknown) => void): void;
  saveDatabase(callback?: (err?: Error | null) => void): void;
  close(callback?: () => void): void;
  throttledSavePending?: boolean;
}
type LokiCtor = (new (file: string, options: object) => Db) & { LokiFsAdapter: new () => object };

const lokiPath = require.resolve('lokijs', { paths: [dirname(require.resolve('azurite/package.json'))] });
installDurableSaves(lokiPath, () => undefined);
// eslint-disable-next-line @typescript-eslint/no-require-imports
const Loki = require(lokiPath) as LokiCtor;

const dir = scratchDir('pd-durable-');
const open = (name: string): Db =>
  new Loki(join(dir, name), { adapter: new Loki.LokiFsAdapter(), autosave: true, autosaveInterval: 60_000 });
const dbs: Db[] = [];
after(async () => {
  for (const db of dbs) await new Promise<void>((r) => db.close(() => r()));
});

/** A saved database file to load, so that a load really reads from disk. */
async function savedFile(name: string): Promise<void> {
  const db = open(name);
  db.addCollection('messages').insert({ text: 'x'.repeat(10_000) });
  await new Promise<void>((resolve, reject) => db.saveDatabase((e) => (e ? reject(e) : resolve())));
  await new Promise<void>((r) => db.close(() => r()));
}

/** Resolves with the answer's status, or with 'no answer' after `ms` (the wedge never answers). */
function post(port: number, ms: number): Promise<number | 'no answer'> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      req.destroy();
      resolve('no answer');
    }, ms);
    const req = request({ host: '127.0.0.1', port, method: 'PUT', path: '/devstoreaccount1/c/b' }, (res) => {
      res.resume();
      res.on('end', () => {
        clearTimeout(timer);
        resolve(res.statusCode ?? 0);
      });
    });
    req.on('error', (e) => (clearTimeout(timer), reject(e)));
    req.end('body');
  });
}

describe('durable saves while a database loads', () => {
  let server: Server;
  let loadingDb: Db | undefined;
  let loaded: Promise<void> = Promise.resolve();
  before(async () => {
    await savedFile('queue.db');
    // A write that changes one database (dirty) while another starts loading, as a restarted
    // Azurite's blob service answers while its queue service loads.
    const written = open('blob.db');
    dbs.push(written);
    const docs = written.addCollection('blobs');
    server = createServer((_req, res) => {
      docs.insert({ at: Date.now() });
      const db = open('queue.db');
      dbs.push(db);
      loadingDb = db;
      loaded = new Promise((resolve, reject) =>
        db.loadDatabase({}, (e) =>
          e ? reject(e instanceof Error ? e : new Error('loadDatabase failed', { cause: e })) : resolve(),
        ),
      );
      res.end('saved');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  test('a write answered while another database loads is answered, and that database saves afterwards', async () => {
    const status = await post((server.address() as AddressInfo).port, 10_000);
    assert.equal(status, 200, 'the write was answered (a wedged save answers nothing)');
    await loaded;
    const db = loadingDb!;
    const saved = await new Promise<string>((resolve) => {
      const timer = setTimeout(() => resolve('never saved'), 10_000);
      db.saveDatabase((e) => (clearTimeout(timer), resolve(e ? e.message : 'saved')));
    });
    assert.equal(saved, 'saved');
    assert.equal(db.throttledSavePending, false);
  });

  test('a save asked of a loading database runs once the load is done', async () => {
    await savedFile('other.db');
    const db = open('other.db');
    dbs.push(db);
    const load = new Promise<void>((resolve, reject) =>
      db.loadDatabase({}, (e) =>
        e ? reject(e instanceof Error ? e : new Error('loadDatabase failed', { cause: e })) : resolve(),
      ),
    );
    const saved = new Promise<string>((resolve) => {
      const timer = setTimeout(() => resolve('never saved'), 10_000);
      db.saveDatabase((e) => (clearTimeout(timer), resolve(e ? e.message : 'saved')));
    });
    await load;
    assert.equal(await saved, 'saved');
  });
});
