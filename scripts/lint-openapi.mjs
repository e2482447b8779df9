// Lints the OpenAPI document (static/openapi.json) with Redocly CLI under redocly.yaml's rules
// (recommended-strict: every warning is an error, so the exit code is non-zero on any problem).
// Telemetry and the update check are off: they would call out of a machine that may have no network.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const cli = join(dirname(require.resolve('@redocly/cli/package.json')), 'bin', 'cli.js');
const r = spawnSync(process.execPath, [cli, 'lint', 'static/openapi.json', '--config', 'redocly.yaml'], {
  stdio: 'inherit',
  env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
});
process.exit(r.status ?? 1);
