/**
 * The real Bicep compiler on infra/ (through scripts/bicep.mjs, as `npm run infra:check` and CI run
 * it): build and lint with every warning a failure, each committed snapshot still what the template
 * produces, a broken template rejected, and the parameters' defaults and ranges as compiled into the
 * ARM template. Where there is no compiler and no dotnet to restore one, each test is reported
 * skipped with how to get it; PUSHDRAIN_BICEP_TESTS=required (.ci/run) makes that a failure.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';

import { SCALE_SPECS, TUNING_SPECS } from '../../shared/config/settings';
import { FLEX_LIMITS } from '../support/flex-deprecations';
import { appSettingsOf } from '../support/infra-snapshot';
import { readRepoFile, repoRoot } from '../support/repo';

const root = repoRoot();
const SCRIPT = join(root, 'scripts', 'bicep.mjs');
const NO_COMPILER = 3;
// The compiler is a 120 MB single-file .NET program: a few seconds to start, minutes on a busy machine.
const TIMEOUT = 600_000;

// The script reads BICEP_PATH and PUSHDRAIN_BICEP_TESTS itself (inherited). `out` is both streams,
// for messages; `stdout` alone is what the script answers (which: the path), since a restore
// reports itself on stderr.
function script(args: string[], env = process.env): { status: number; out: string; stdout: string } {
  const run = spawnSync(process.execPath, [SCRIPT, ...args], { cwd: root, encoding: 'utf8', timeout: TIMEOUT, env });
  return {
    status: run.status ?? 1,
    out: `${run.stdout}${run.stderr}${run.error?.message ?? ''}`,
    stdout: run.stdout ?? '',
  };
}

/**
 * The compiler's path, or why the tests skip: BICEP_PATH where set; else the version
 * infra/tools/bicep.csproj pins (restored if dotnet is there), which wrote the snapshots; else any
 * other (`bicep` on PATH, `az bicep install`'s).
 */
function locate(): { exe: string } | { skip: string } {
  let found = process.env.BICEP_PATH ? script(['which']) : script(['which', '--pinned']);
  if (found.status === NO_COMPILER && !process.env.BICEP_PATH) found = script(['which']);
  if (found.status === 0) return { exe: found.stdout.trim() };
  // Exit 3: none, and none required; with PUSHDRAIN_BICEP_TESTS=required the script exits 1.
  if (found.status === NO_COMPILER) return { skip: found.out.trim().replace(/^bicep: /, '') };
  assert.fail(`scripts/bicep.mjs which: ${found.out}`);
}

const compiler = locate();
const skip = 'skip' in compiler ? compiler.skip : false;
/** The checks run the compiler found above, whatever else the machine has on PATH. */
const withCompiler = 'exe' in compiler ? { ...process.env, BICEP_PATH: compiler.exe } : process.env;

/** The parameter behind an app setting: PUSHDRAIN_CHUNK_SIZE is chunkSize, PUSHDRAIN_SCALE_MIN_INSTANCES scaleMinInstances. */
const parameterOf = (setting: string): string =>
  setting
    .replace(/^PUSHDRAIN_/, '')
    .toLowerCase()
    .replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

interface ArmParameter {
  type: string;
  defaultValue?: unknown;
  minValue?: number;
  maxValue?: number;
  allowedValues?: unknown[];
}

interface ArmTemplate {
  parameters: Record<string, ArmParameter>;
  resources: Record<string, { type: string; properties?: { template?: ArmTemplate } }> | { type: string }[];
}

/** Every module's parameters, by module, from the nested deployments of a compiled template. */
function moduleParameters(template: ArmTemplate): Record<string, ArmParameter>[] {
  const resources = Object.values(template.resources) as { type: string; properties?: { template?: ArmTemplate } }[];
  return resources.flatMap((r) => {
    const nested = r.type === 'Microsoft.Resources/deployments' ? r.properties?.template : undefined;
    return nested ? [nested.parameters ?? {}, ...moduleParameters(nested)] : [];
  });
}

void describe('infra: the Bicep compiler', { skip }, () => {
  let parameters: Record<string, ArmParameter> = {};
  let modules: Record<string, ArmParameter>[] = [];

  before(() => {
    if (!('exe' in compiler)) return;
    const run = spawnSync(compiler.exe, ['build', join(root, 'infra', 'main.bicep'), '--stdout'], {
      cwd: root,
      encoding: 'utf8',
      timeout: TIMEOUT,
      maxBuffer: 64 * 1024 * 1024,
    });
    assert.equal(run.status, 0, run.stderr);
    const template = JSON.parse(run.stdout) as ArmTemplate;
    parameters = template.parameters;
    modules = moduleParameters(template);
  });

  void it(
    'npm run infra:check passes: build and lint without a warning, every snapshot current',
    { timeout: TIMEOUT },
    () => {
      const run = script(['check'], withCompiler);
      assert.equal(run.status, 0, run.out);
      assert.match(run.out, /infra check \(Bicep CLI version [\d.]+ .*\): passed/);
    },
  );

  void it(
    'on an empty NuGet cache, the lookup restores the pinned compiler and answers with its path alone on stdout',
    { timeout: TIMEOUT },
    () => {
      // A fresh machine: no package cache and no HTTP cache, so `dotnet restore` fetches the package.
      const cache = mkdtempSync(join(tmpdir(), 'pushdrain-nuget-'));
      try {
        const env = {
          ...process.env,
          NUGET_PACKAGES: join(cache, 'packages'),
          NUGET_HTTP_CACHE_PATH: join(cache, 'http-cache'),
        };
        const run = script(['which', '--pinned'], env);
        assert.equal(run.status, 0, run.out);
        assert.match(run.out, /bicep: restored Azure\.Bicep\.CommandLine\.linux-x64 [\d.]+ in [\d.]+ s/);
        const exe = run.stdout.trim();
        assert.ok(exe.startsWith(join(cache, 'packages')), `the restored compiler, not another: ${exe}`);
        const version = spawnSync(exe, ['--version'], { encoding: 'utf8', timeout: TIMEOUT });
        assert.equal(version.status, 0, version.stderr);
        assert.match(version.stdout, /Bicep CLI version/);
      } finally {
        rmSync(cache, { recursive: true, force: true });
      }
    },
  );

  void it(
    'a template with an unknown property fails the check (BCP037, a warning the compiler alone would let through)',
    { timeout: TIMEOUT },
    () => {
      const run = script(['check', 'test/fixtures/bicep/unknown-property.bicep'], withCompiler);
      assert.equal(run.status, 1, run.out);
      assert.match(
        run.out,
        /FAILED build: test\/fixtures\/bicep\/unknown-property\.bicep\(\d+,\d+\) Warning BCP037: The property "keyAccessMode" is not allowed/,
      );
    },
  );

  void it('each tuning parameter defaults to its TUNING_SPECS default, within the range the app accepts, and is what the app is given', () => {
    const deployed = appSettingsOf();
    for (const spec of TUNING_SPECS) {
      const name = parameterOf(spec.setting);
      const p = parameters[name] ?? assert.fail(`${spec.setting}: no parameter ${name} in main.bicep`);
      assert.equal(p.type, 'int', `${name} type`);
      assert.equal(p.defaultValue, spec.def, `${name} default`);
      assert.ok(
        p.minValue !== undefined && p.minValue >= spec.min,
        `${name} minValue ${p.minValue} must be within the app's ${spec.min}`,
      );
      assert.ok(
        p.maxValue !== undefined && p.maxValue <= spec.max,
        `${name} maxValue ${p.maxValue} must be within the app's ${spec.max}`,
      );
      assert.equal(deployed[spec.setting], String(p.defaultValue), `${spec.setting} as deployed by default`);
    }
  });

  void it('the named parameters: partitions, the drain budget under functionTimeout, the plans, the scaling agent bounds', () => {
    const int = (name: string): ArmParameter => parameters[name] ?? assert.fail(`no parameter ${name}`);
    assert.deepEqual(
      [int('partitions').defaultValue, int('partitions').minValue, int('partitions').maxValue],
      [4, 1, 64],
    );
    const budget = int('drainBudgetSeconds');
    assert.equal(budget.defaultValue, 240);
    // The plan defaults differ (Flex and Premium: 30 min), so host.json must say it.
    const host = JSON.parse(readRepoFile('host.json')) as { functionTimeout?: string };
    const parts =
      /^(\d{2}):(\d{2}):(\d{2})$/.exec(host.functionTimeout ?? '') ??
      assert.fail(`host.json functionTimeout ${host.functionTimeout ?? 'absent'}`);
    const timeout = Number(parts[1]) * 3600 + Number(parts[2]) * 60 + Number(parts[3]);
    assert.ok(budget.maxValue! + 60 <= timeout, `drain budget cap ${budget.maxValue}s vs functionTimeout ${timeout}s`);
    assert.deepEqual(
      [int('hostingPlan').defaultValue, int('hostingPlan').allowedValues],
      ['flex', ['flex', 'premium']],
    );
    assert.deepEqual(
      [int('scaleAgentMode').defaultValue, int('scaleAgentMode').allowedValues],
      ['dry-run', ['off', 'dry-run', 'apply']],
    );
    for (const spec of SCALE_SPECS.filter((s) => s.key !== 'maxInstances')) {
      const p = int(parameterOf(spec.setting));
      assert.equal(p.defaultValue, spec.def, spec.setting);
      assert.ok(
        p.minValue! >= spec.min && p.maxValue! <= spec.max,
        `${spec.setting} range within ${spec.min}–${spec.max}`,
      );
    }
    // The agent's ceiling is the plan's own: each plan's parameter must stay within what the app accepts.
    const ceiling = SCALE_SPECS.find((s) => s.key === 'maxInstances')!;
    for (const name of ['maximumInstanceCount', 'premiumMaximumElasticWorkerCount']) {
      assert.ok(
        int(name).minValue! >= ceiling.min && int(name).maxValue! <= ceiling.max,
        `${name} within ${ceiling.min}–${ceiling.max}`,
      );
    }
  });

  void it("the Flex parameters' bounds are Flex Consumption's documented ones, in main.bicep and in every module", () => {
    const withFlex = [parameters, ...modules].filter((p) => p.instanceMemoryMB || p.maximumInstanceCount);
    assert.ok(withFlex.length >= 2, `main.bicep and the function app module: ${withFlex.length}`);
    for (const p of withFlex) {
      assert.deepEqual(p.instanceMemoryMB?.allowedValues, [...FLEX_LIMITS.instanceMemoryMB]);
      assert.deepEqual(
        [p.maximumInstanceCount?.minValue, p.maximumInstanceCount?.maxValue],
        [FLEX_LIMITS.maximumInstanceCount.min, FLEX_LIMITS.maximumInstanceCount.max],
      );
    }
  });

  void it('docs/DEPLOY.md documents every parameter of main.bicep in its table', () => {
    const doc = readRepoFile('docs/DEPLOY.md');
    assert.ok(Object.keys(parameters).length > 10);
    for (const name of Object.keys(parameters))
      assert.match(doc, new RegExp(`^\\| \`${name}\` \\|`, 'm'), `no table row for ${name}`);
  });
});
