/**
 * The unit lane's promise, kept by the runner rather than by memory. scripts/run-tests.mjs preloads
 * this module (`--require`) into every test file; in a file whose first line is {@link UNIT_LANE_MARK}
 * it refuses what the lane promises not to need (a socket, a listening server, a child process other
 * than `git`), so a unit file that starts to lean on Azurite, the broker or a browser fails at once,
 * in `npm test` as in `npm run test:unit`, instead of slowing the fast lane down unnoticed.
 */
import childProcess from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { join, resolve } from 'node:path';

/** The first line of a test file that belongs to the unit lane. */
export const UNIT_LANE_MARK = '// unit lane: logic only';

/**
 * Whether the test file at `path` declares itself part of the unit lane. A compiled file under dist/
 * is judged by its TypeScript source, whose first line the compiler does not keep first.
 */
export function inUnitLane(path: string): boolean {
  const compiled = /^(.*)[\\/]dist[\\/](.*)\.js$/.exec(resolve(path));
  const source = compiled ? join(compiled[1]!, `${compiled[2]!}.ts`) : path;
  try {
    return readFileSync(source, 'utf8').startsWith(UNIT_LANE_MARK);
  } catch {
    return false;
  }
}

function refuse(what: string): never {
  throw new Error(
    `unit lane: this file is marked "${UNIT_LANE_MARK}" but ${what}; move it out of the lane or cut the dependency`,
  );
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
