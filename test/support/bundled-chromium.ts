/**
 * The Chromium that arrives with `npm install`: @sparticuz/chromium ships a headless Chromium for
 * Linux x64 inside the npm package (brotli archives under its bin/), so a fresh machine needs no
 * apt step and no download. Its own `executablePath()` unpacks into the shared /tmp and returns
 * whatever file is there, even half written by another test process or left by another version; so
 * the archives are unpacked here once per installed version, into a staging folder renamed into
 * place, which makes the unpacked browser appear whole or not at all.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

import { repoRoot } from './repo';

const PACKAGE = '@sparticuz/chromium';
/** The archives the package unpacks for a headless browser outside AWS (al2023.tar.br is Lambda's libc). */
const ARCHIVES = ['chromium.br', 'fonts.tar.br', 'swiftshader.tar.br'];

/** The package's bin/ folder, or undefined where it is not installed or this platform cannot run it. */
function packageBin(): string | undefined {
  if (process.platform !== 'linux' || process.arch !== 'x64') return undefined;
  try {
    const bin = join(dirname(createRequire(__filename).resolve(PACKAGE)), '..', 'bin');
    return ARCHIVES.every((a) => existsSync(join(bin, a))) ? bin : undefined;
  } catch {
    return undefined;
  }
}

export const bundledChromiumAvailable = (): boolean => packageBin() !== undefined;

export interface BundledChromium {
  executablePath: string;
  /** The browser's own environment: its fonts.conf. */
  env: Record<string, string>;
}

/** Unpacks the package's browser once (per version) and says where it is. */
export async function bundledChromium(): Promise<BundledChromium> {
  const bin = packageBin();
  if (bin === undefined) throw new Error(`${PACKAGE} is not installed for ${process.platform}-${process.arch}`);
  const { version } = JSON.parse(readFileSync(join(bin, '..', 'package.json'), 'utf8')) as { version: string };
  const home = join(repoRoot(), 'node_modules', '.cache', 'pushdrain-chromium', version);
  const found = { executablePath: join(home, 'chromium'), env: { FONTCONFIG_PATH: join(home, 'fonts') } };
  if (existsSync(found.executablePath)) return found;

  const staging = `${home}.staging-${process.pid}-${Date.now()}`;
  mkdirSync(staging, { recursive: true });
  try {
    // The package's `inflate` writes into os.tmpdir(), which it reads once per call, before its
    // first await: point it at the staging folder for exactly those calls.
    const { inflate } = (await import(PACKAGE)) as { inflate: (file: string) => Promise<string> };
    const before = process.env.TMPDIR;
    process.env.TMPDIR = staging;
    let unpacking: Promise<string[]>;
    try {
      unpacking = Promise.all(ARCHIVES.map((a) => inflate(join(bin, a))));
    } finally {
      if (before === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = before;
    }
    await unpacking;
    // The shipped fonts.conf names Lambda's fonts folder under the system temp dir; name the one it sits in.
    writeFileSync(
      join(staging, 'fonts', 'fonts.conf'),
      `<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>\n  <dir>${join(home, 'fonts')}</dir>\n  <cachedir>${join(home, 'fonts-cache')}</cachedir>\n</fontconfig>\n`,
    );
    try {
      renameSync(staging, home);
    } catch (e) {
      // Another test process renamed its copy into place first: use that one.
      if (!existsSync(found.executablePath)) throw e;
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return found;
}
