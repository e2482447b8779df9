/**
 * The .NET SDK for the tests that hold the stand-ins to the official .NET clients. Where `dotnet`
 * is missing they skip with one line; where PUSHDRAIN_DOTNET_TESTS=required (CI sets it), a
 * missing SDK is a failure instead.
 */
import { spawn, spawnSync } from 'node:child_process';

const DOTNET_REQUIRED = process.env.PUSHDRAIN_DOTNET_TESTS === 'required';

/** Quiet, offline-friendly CLI: no telemetry, no first-run banner. */
const DOTNET_ENV: NodeJS.ProcessEnv = {
  ...process.env,
  DOTNET_CLI_TELEMETRY_OPTOUT: '1',
  DOTNET_NOLOGO: '1',
  DOTNET_SKIP_FIRST_TIME_EXPERIENCE: '1',
};

function dotnetInstalled(): boolean {
  return spawnSync('dotnet', ['--version'], { env: DOTNET_ENV, stdio: 'ignore', timeout: 30_000 }).status === 0;
}

/** A skip reason for node:test, or false when the .NET tests must run. */
export function dotnetSkip(): string | false {
  if (DOTNET_REQUIRED || dotnetInstalled()) return false;
  return 'the .NET SDK (dotnet) is not installed; PUSHDRAIN_DOTNET_TESTS=required makes this a failure';
}

export interface Finished {
  code: number | null;
  output: string;
  ms: number;
}

/** Runs a command to its end, or kills it after `timeoutMs`; stdout and stderr together. */
export function run(command: string, args: string[], options: { cwd: string; timeoutMs: number }): Promise<Finished> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: DOTNET_ENV, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output, ms: Date.now() - started });
    });
  });
}

/**
 * `dotnet build -c Release` (restoring from NuGet the first time); obj/ and bin/ stay beside the
 * project, so a second run only checks timestamps.
 */
export async function buildDotnetProject(projectDir: string, timeoutMs = 8 * 60_000): Promise<Finished> {
  const built = await run('dotnet', ['build', '-c', 'Release', '-nologo', '-v', 'q'], { cwd: projectDir, timeoutMs });
  if (built.code !== 0)
    throw new Error(`dotnet build in ${projectDir} failed (exit ${String(built.code)}):\n${built.output.slice(-4000)}`);
  return built;
}
