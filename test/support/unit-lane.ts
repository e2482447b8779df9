/**
 * The unit lane's promise, kept by the runner rather than by memory. A test file is in the unit lane
 * exactly when it sits in a folder named `unit` under its `test` folder (`test/<area>/unit/`,
 * `tools/<tool>/test/unit/`; compiled, the same folders under dist/): the lane is where a file is,
 * not a line in it. scripts/run-tests.mjs preloads this module (`--require`) into every test
 * file; in a unit-lane file it refuses what the lane promises not to need (a socket, a listening
 * server, a child process other than `git`), so a unit file that starts to lean on Azurite, the
 * broker or a browser fails at once, in `npm test` as in `npm run test:unit`, instead of slowing the
 * fast lane down unnoticed.
 */
import childProcess from 'node:child_process';
import net from 'node:net';

/**
 * Whether the test file at `path` is in the unit lane: one of its folders below the last folder named
 * `test` is named `unit`. Decided by the path alone, so the .ts source and its compiled .js under
 * dist/ agree, and a checkout that happens to sit in a folder named `unit` puts nothing in the lane.
 */
export function inUnitLane(path: string): boolean {
  const folders = path.split(/[\\/]/).slice(0, -1);
  const below = folders.lastIndexOf('test');
  return below !== -1 && folders.slice(below + 1).includes('unit');
}

function refuse(what: string): never {
  throw new Error(`unit lane: this file is in a unit/ folder but ${what}; move it out of unit/ or cut the dependency`);
}

/** Replaces what the lane forbids with refusals, for the rest of this process. */
export function guardUnitLane(): void {
  net.Socket.prototype.connect = function connect(): never {
    refuse('it opened a network connection');
  };
  net.Server.prototype.listen = function listen(): never {
    refuse('it started a server');
  };
  const cp = childProcess as unknown as Record<string, unknown>;
  for (const name of ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork']) {
    const original = cp[name] as (cmd: string, ...rest: unknown[]) => unknown;
    cp[name] = (cmd: string, ...rest: unknown[]): unknown => {
      // Reading the checkout's file list is logic, not a service: the repo-reading tests may.
      if (name !== 'fork' && cmd === 'git') return original(cmd, ...rest);
      refuse(`it started a child process (${String(cmd)})`);
    };
  }
}

// Under `node --test`, each file runs in its own process with the file's path as argv[1].
const file = process.argv[1];
if (file !== undefined && inUnitLane(file)) guardUnitLane();
