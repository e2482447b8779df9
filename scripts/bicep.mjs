// The real Bicep compiler on infra/: build, lint and snapshots.
//
//   node scripts/bicep.mjs check     build + lint infra/main.bicep, validate every snapshot (npm run infra:check)
//   node scripts/bicep.mjs check F   build + lint the Bicep file F alone, by the same rules
//   node scripts/bicep.mjs snapshot  rewrite the snapshots after an intended change to infra/
//   node scripts/bicep.mjs which     print the compiler's path (restoring it if needed)
//   node scripts/bicep.mjs restore   make sure the pinned compiler is there (CI's first step)
//
// --pinned skips BICEP_PATH, PATH and ~/.azure/bin: only the version infra/tools/bicep.csproj pins,
// the one the snapshots were written with (CI uses it; GitHub's runners carry another `bicep`).
//
// The compiler is, in this order: BICEP_PATH; `bicep` on PATH; ~/.azure/bin/bicep (az bicep
// install); the Azure.Bicep.CommandLine.linux-x64 package that infra/tools/bicep.csproj pins,
// restored by `dotnet restore` into the NuGet package cache. Where none is there and there is no
// dotnet, check prints one line saying how to get it and exits 0, unless
// PUSHDRAIN_BICEP_TESTS=required (CI), where that is a failure. Exit 3 from which/restore means
// "no compiler, and none required" (the infra tests skip on it); required, it is exit 1.
import { spawnSync } from 'node:child_process';
import { accessSync, chmodSync, constants, existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const INFRA = join(root, 'infra');
const PROJECT = join(INFRA, 'tools', 'bicep.csproj');
const SNAPSHOTS = join(INFRA, 'snapshots');
const PACKAGE = 'Azure.Bicep.CommandLine.linux-x64';
const HOW_TO =
  'no Bicep compiler: install the .NET SDK (then `npm run infra:check` restores the pinned one), run `az bicep install`, or set BICEP_PATH';
const REQUIRED = process.env.PUSHDRAIN_BICEP_TESTS === 'required';
const NO_COMPILER = 3;

// Fixed deployment context: a snapshot depends on nothing of the machine or the person running it.
const SNAPSHOT_CONTEXT = {
  tenantId: '00000000-0000-0000-0000-00000000aaaa',
  subscriptionId: '00000000-0000-0000-0000-00000000bbbb',
  location: 'eastus',
  environmentName: 'snapshot',
};

/** Rules whose finding depends on the date, not on the commit: reported, never failing. */
const REPORTED_ONLY = new Set(['use-recent-api-versions']);

function executable(path) {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function onPath(name) {
  for (const dir of (process.env.PATH ?? '').split(delimiter).filter(Boolean)) {
    if (executable(join(dir, name))) return join(dir, name);
  }
  return undefined;
}

function pinnedVersion() {
  const m = new RegExp(`PackageDownload Include="${PACKAGE.replaceAll('.', '\\.')}" Version="\\[([^\\]]+)\\]"`).exec(
    readFileSync(PROJECT, 'utf8'),
  );
  if (!m) throw new Error(`${relative(root, PROJECT)} does not pin ${PACKAGE} with Version="[x.y.z]"`);
  return m[1];
}

/** The restored package's executable in a NuGet global-packages folder (ids are lower-cased there). */
const packagedBicep = (packagesDir) => join(packagesDir, PACKAGE.toLowerCase(), pinnedVersion(), 'tools', 'bicep');

function usable(path) {
  if (!existsSync(path)) return undefined;
  // NuGet extracts without the executable bit on some SDKs.
  if (!executable(path)) chmodSync(path, 0o755);
  return path;
}

function restored() {
  const packagesDir = process.env.NUGET_PACKAGES || join(homedir(), '.nuget', 'packages');
  return usable(packagedBicep(packagesDir));
}

function restore() {
  if (!onPath('dotnet')) return undefined;
  const started = Date.now();
  // A first run of the SDK would print its welcome banner and make a development certificate.
  const env = {
    ...process.env,
    DOTNET_NOLOGO: '1',
    DOTNET_SKIP_FIRST_TIME_EXPERIENCE: '1',
    DOTNET_GENERATE_ASPNET_CERTIFICATE: 'false',
  };
  // The restore's own output goes to stderr: `which` answers on stdout with the path alone.
  const run = spawnSync('dotnet', ['restore', PROJECT, '--nologo', '--verbosity', 'quiet'], {
    stdio: ['ignore', 2, 'inherit'],
    env,
    timeout: 600_000,
  });
  if (run.status !== 0)
    throw new Error(`dotnet restore ${relative(root, PROJECT)} failed (exit ${run.status ?? run.signal})`);
  // The cache may be elsewhere (NuGet.Config globalPackagesFolder): ask NuGet where it put it.
  const list = spawnSync('dotnet', ['nuget', 'locals', 'global-packages', '--list'], {
    encoding: 'utf8',
    env,
    timeout: 120_000,
  });
  const dir = /global-packages:\s*(.+)/.exec(list.stdout ?? '')?.[1]?.trim();
  const found = (dir && usable(packagedBicep(dir))) || restored();
  if (!found) throw new Error(`dotnet restore succeeded but ${PACKAGE} ${pinnedVersion()} has no tools/bicep`);
  console.error(`bicep: restored ${PACKAGE} ${pinnedVersion()} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return found;
}

/** The compiler's path, or undefined when there is none and none can be restored. */
function findBicep(pinned) {
  if (pinned) return restored() ?? restore();
  if (process.env.BICEP_PATH) {
    if (!executable(process.env.BICEP_PATH))
      throw new Error(`BICEP_PATH=${process.env.BICEP_PATH} is not an executable file`);
    return process.env.BICEP_PATH;
  }
  const azCli = join(homedir(), '.azure', 'bin', 'bicep');
  return onPath('bicep') ?? (executable(azCli) ? azCli : undefined) ?? restored() ?? restore();
}

function bicep(exe, args, env = process.env) {
  const run = spawnSync(exe, args, { cwd: root, encoding: 'utf8', env, timeout: 300_000, maxBuffer: 64 * 1024 * 1024 });
  if (run.error) throw run.error;
  return { status: run.status ?? 1, out: `${run.stdout}\n${run.stderr}` };
}

/** Diagnostics lines: `path(line,col) : Level CODE: message`. */
function diagnostics(text) {
  return text
    .split('\n')
    .map((line) => /^(.*\(\d+,\d+\)) : (Error|Warning|Info) ([\w-]+): (.*)$/.exec(line.trim()))
    .filter(Boolean)
    .map(([, where, level, code, message]) => ({
      where: relative(root, where.replace(/\(\d+,\d+\)$/, '')) + where.slice(where.lastIndexOf('(')),
      level,
      code,
      message,
    }));
}

/** Every .bicepparam under infra/snapshots/: one per variant of the deployment. */
function snapshotParams() {
  return readdirSync(SNAPSHOTS)
    .filter((f) => f.endsWith('.bicepparam'))
    .sort()
    .map((f) => join(SNAPSHOTS, f));
}

/**
 * The environment a snapshot is evaluated in: what azd would pass for a fresh environment, and
 * nothing from the caller's shell (an exported PUSHDRAIN_PARTITIONS must not change a snapshot).
 */
function snapshotEnv() {
  const keep = ['PATH', 'HOME', 'TMPDIR', 'DOTNET_ROOT', 'DOTNET_BUNDLE_EXTRACT_BASE_DIR'];
  const env = Object.fromEntries(keep.filter((k) => process.env[k] !== undefined).map((k) => [k, process.env[k]]));
  return {
    ...env,
    NO_COLOR: '1',
    AZURE_ENV_NAME: SNAPSHOT_CONTEXT.environmentName,
    AZURE_LOCATION: SNAPSHOT_CONTEXT.location,
  };
}

function snapshot(exe, params, mode) {
  const c = SNAPSHOT_CONTEXT;
  const args = [
    'snapshot',
    params,
    '--mode',
    mode,
    '--tenant-id',
    c.tenantId,
    '--subscription-id',
    c.subscriptionId,
    '--location',
    c.location,
  ];
  return bicep(exe, args, snapshotEnv());
}

/** Bicep sources under a folder, for the one rule the compiler cannot hold: why a rule is switched off. */
function bicepSources(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'obj' || e.name === 'bin' ? [] : bicepSources(p);
    return /\.bicep(param)?$/.test(e.name) ? [p] : [];
  });
}

/** `#disable-next-line rule` without `// reason` on the same line: a silenced rule nobody can judge later. */
function unexplainedDisables(files) {
  return files.flatMap((file) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .flatMap((line, i) =>
        /#disable-next-line\b/.test(line) && !/#disable-next-line\s+[\w\s-]+\/\/\s*\S/.test(line)
          ? [`${relative(root, file)}(${i + 1}): #disable-next-line without "// reason" on the same line`]
          : [],
      ),
  );
}

/** Build, lint and (for infra/ itself) validate snapshots; returns the failures and the reported findings. */
function check(exe, target) {
  const failures = [];
  const reported = [];
  const main = target ?? join(INFRA, 'main.bicep');
  for (const [what, args] of [
    ['build', ['build', main, '--stdout']],
    ['lint', ['lint', main]],
  ]) {
    const run = bicep(exe, args);
    const found = diagnostics(run.out);
    for (const d of found)
      (REPORTED_ONLY.has(d.code) ? reported : failures).push(`${what}: ${d.where} ${d.level} ${d.code}: ${d.message}`);
    if (run.status !== 0 && found.length === 0)
      failures.push(`${what} exited ${run.status}: ${run.out.trim().split('\n').slice(-5).join(' / ')}`);
  }
  failures.push(...unexplainedDisables(target ? [target] : bicepSources(INFRA)));
  for (const params of target ? [] : snapshotParams()) {
    const run = snapshot(exe, params, 'validate');
    if (run.status !== 0)
      failures.push(
        `snapshot ${relative(root, params)}: ${run.out.trim()}\n  (if the change is intended: npm run infra:snapshot, and commit the diff)`,
      );
  }
  return { failures, reported };
}

function main() {
  const args = process.argv.slice(2);
  const [command = 'check', target] = args.filter((a) => !a.startsWith('--'));
  const exe = findBicep(args.includes('--pinned'));
  if (!exe) {
    if (command === 'check' && !REQUIRED) {
      console.log(`infra check skipped: ${HOW_TO}`);
      return 0;
    }
    console.error(`bicep: ${HOW_TO}${REQUIRED ? ' (PUSHDRAIN_BICEP_TESTS=required)' : ''}`);
    return REQUIRED ? 1 : NO_COMPILER;
  }
  if (command === 'which') {
    console.log(exe);
    return 0;
  }
  if (command === 'restore') return 0;
  const version = bicep(exe, ['--version']).out.trim();
  if (!version.includes(`version ${pinnedVersion()} `)) {
    console.log(
      `bicep: ${exe} is ${version}; the snapshots were written with ${pinnedVersion()} (--pinned uses that one)`,
    );
  }
  if (command === 'snapshot') {
    for (const params of snapshotParams()) {
      const run = snapshot(exe, params, 'overwrite');
      if (run.status !== 0) {
        console.error(`snapshot ${relative(root, params)}: ${run.out.trim()}`);
        return 1;
      }
      console.log(`wrote ${relative(root, params).replace(/\.bicepparam$/, '.snapshot.json')}`);
    }
    return 0;
  }
  if (command !== 'check') {
    console.error(`usage: node scripts/bicep.mjs [check [file.bicep]|snapshot|which|restore] [--pinned]`);
    return 2;
  }
  const started = Date.now();
  const { failures, reported } = check(exe, target && join(process.cwd(), target));
  for (const r of reported) console.log(process.env.GITHUB_ACTIONS ? `::warning::${r}` : `reported: ${r}`);
  for (const f of failures) console.error(process.env.GITHUB_ACTIONS ? `::error::${f}` : `FAILED ${f}`);
  const took = ((Date.now() - started) / 1000).toFixed(1);
  console.log(
    `infra check (${version}): ${failures.length === 0 ? 'passed' : `${failures.length} failure(s)`}, ${reported.length} reported, ${took} s`,
  );
  return failures.length === 0 ? 0 : 1;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) process.exitCode = main();
