/**
 * `npm start -- --traces`: the Aspire dashboard (a trace, log and metric viewer with an OTLP
 * receiver) from NuGet, no Docker. `dotnet restore` of traces/aspire-dashboard.csproj brings the
 * pinned package into the NuGet cache (a second start finds it there and downloads nothing); its
 * self-contained executable runs on 127.0.0.1 through traces/dashboard-child.ts, which stops it
 * when `npm start` stops or dies. The UI asks for the token in the login URL it prints (the
 * dashboard's default); its OTLP/HTTP receiver takes anything from this machine, as a local
 * collector does.
 */
import { execFile, fork } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

const DASHBOARD_PROJECT = join('tools', 'devstack', 'traces', 'aspire-dashboard.csproj');
const PACKAGE = 'aspire.dashboard.sdk.linux-x64';
/** A first restore downloads about 80 MB. */
const RESTORE_TIMEOUT_MS = 10 * 60_000;
const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 15_000;

/** `--traces` cannot run here (no dotnet, another platform): one line, said before anything starts. */
export class TracesUnavailableError extends Error {}

export interface AspireDashboard {
  /** The UI, e.g. `http://127.0.0.1:18888`. */
  readonly url: string;
  /** The UI with its one-time login token. */
  readonly loginUrl: string;
  /** What OTEL_EXPORTER_OTLP_ENDPOINT is set to (OTLP/HTTP). */
  readonly otlpEndpoint: string;
  stop(): Promise<void>;
}

export interface DashboardOptions {
  root: string;
  /** The UI's port (0: any free port). */
  port: number;
  /** The OTLP/HTTP receiver's port (0: any free port). */
  otlpPort: number;
  /** The environment `npm start` runs in: the dashboard's own `Dashboard__…` settings pass through. */
  env: NodeJS.ProcessEnv;
}

/** The pinned version, read from the project so that it is written in one place. */
function pinnedVersion(root: string): string {
  const m = /Include="Aspire\.Dashboard\.Sdk\.linux-x64"\s+Version="\[([^\]]+)\]"/.exec(
    readFileSync(join(root, DASHBOARD_PROJECT), 'utf8'),
  );
  if (!m?.[1]) throw new Error(`${DASHBOARD_PROJECT} pins no Aspire.Dashboard.Sdk.linux-x64 version`);
  return m[1];
}

async function dotnetVersion(): Promise<string | undefined> {
  try {
    return (await run('dotnet', ['--version'], { timeout: 60_000 })).stdout.trim();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

/** Restores the pinned package (a no-op once it is in the cache) and answers its executable. */
async function restore(root: string, env: NodeJS.ProcessEnv): Promise<string> {
  if (process.platform !== 'linux' || process.arch !== 'x64')
    throw new TracesUnavailableError(
      `--traces runs the Aspire dashboard's linux-x64 package; this is ${process.platform}-${process.arch}`,
    );
  if ((await dotnetVersion()) === undefined)
    throw new TracesUnavailableError(
      '--traces needs the .NET SDK (dotnet) to fetch and run the Aspire dashboard, and there is no dotnet on PATH: install it, or set OTEL_EXPORTER_OTLP_ENDPOINT to a collector of your own',
    );
  try {
    await run('dotnet', ['restore', join(root, DASHBOARD_PROJECT), '--verbosity', 'quiet', '--nologo'], {
      cwd: root,
      timeout: RESTORE_TIMEOUT_MS,
    });
  } catch (e) {
    const { stdout = '', stderr = '' } = e as { stdout?: string; stderr?: string };
    throw new Error(`dotnet restore ${DASHBOARD_PROJECT} failed: ${`${stdout}${stderr}`.trim().slice(-2000)}`);
  }
  const packages = env.NUGET_PACKAGES || join(homedir(), '.nuget', 'packages');
  const exe = join(packages, PACKAGE, pinnedVersion(root), 'tools', 'Aspire.Dashboard');
  if (!existsSync(exe)) throw new Error(`dotnet restore succeeded but ${exe} is not there`);
  return exe;
}

/** The dashboard's own settings (`Dashboard__…`, `ASPIRE_…`, `DOTNET_…`, `ASPNETCORE_…`) and what a process needs. */
function dashboardEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const passed = Object.entries(env).filter(
    ([k]) => ['PATH', 'HOME', 'TMPDIR', 'LANG'].includes(k) || /^(Dashboard__|ASPIRE_|DOTNET_|ASPNETCORE_)/i.test(k),
  );
  return Object.fromEntries(passed);
}

export async function startAspireDashboard(o: DashboardOptions): Promise<AspireDashboard> {
  const exe = await restore(o.root, o.env);
  const child = fork(join(__dirname, 'traces', 'dashboard-child.js'), [exe], {
    env: {
      ...dashboardEnv(o.env),
      ASPNETCORE_URLS: `http://127.0.0.1:${o.port}`,
      ASPIRE_DASHBOARD_OTLP_HTTP_ENDPOINT_URL: `http://127.0.0.1:${o.otlpPort}`,
      // Loopback only: any program on this machine may send telemetry, as to a local collector.
      Dashboard__Otlp__AuthMode: 'Unsecured',
    },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    // Its own group: a terminal's Ctrl-C reaches npm start, which stops it in order.
    detached: true,
  });
  let out = '';
  for (const stream of [child.stdout, child.stderr]) stream?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  };
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (let i = 0; i < START_TIMEOUT_MS / 100; i++) {
    // The summary it prints once every endpoint listens; the login line only when the UI asks for a token.
    const ui = /- Dashboard:\s+(http:\/\/\S+)/.exec(out)?.[1];
    const otlp = /- OTLP\/HTTP:\s+(http:\/\/\S+)/.exec(out)?.[1];
    if (ui && otlp) {
      const login = /- Login URL:\s+(http:\/\/\S+)/.exec(out)?.[1] ?? ui;
      // Its log after start-up is the dashboard's own business; kept out of npm start's output.
      for (const stream of [child.stdout, child.stderr]) stream?.removeAllListeners('data').resume();
      return { url: ui, loginUrl: login, otlpEndpoint: otlp, stop };
    }
    if (child.exitCode !== null || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  await stop();
  throw new Error(`the Aspire dashboard did not start within ${START_TIMEOUT_MS / 1000} s:\n${out.slice(-2000)}`);
}
