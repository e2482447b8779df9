// Build step after tsc: the status page's files go to dist/static/, where the compiled app
// reads them (shared/status/dashboard-page.ts). Part of the deploy package with dist/.
import { cpSync, rmSync } from 'node:fs';

rmSync('dist/static', { recursive: true, force: true });
cpSync('static', 'dist/static', { recursive: true });
