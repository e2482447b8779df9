/**
 * The `npm start` banner's HTTP lines: the API's address with what is checked in this auth mode,
 * then each route, sorted by path and method, with who may call it. Locally the host checks no
 * function key (as Core Tools); with PUSHDRAIN_AUTH=entra or both the app checks bearer tokens
 * itself, so the banner names the roles instead of the platform's `anonymous`.
 */
import { FUNCTION_ACCESS } from '../../functions/route-access';
import type { AuthMode } from '../../shared/config/auth-settings';

export interface BannerRoute {
  functionName: string;
  /** e.g. `api/batches/{batchId}` */
  template: string;
  methods: string[];
  authLevel: string;
}

export function routeLines(base: string, mode: AuthMode, routes: readonly BannerRoute[]): string[] {
  const header =
    mode === 'entra'
      ? 'PUSHDRAIN_AUTH=entra: the app requires a bearer token with one of the roles shown; function keys are not used'
      : mode === 'both'
        ? 'PUSHDRAIN_AUTH=both: a bearer token, when sent, must carry one of the roles shown; function keys are not checked locally'
        : 'function keys are not checked locally: any key or none';
  const who = (r: BannerRoute): string => {
    if (mode === 'keys') return `auth ${r.authLevel}`;
    const access = FUNCTION_ACCESS[r.functionName];
    if (access === undefined) return `auth ${r.authLevel}`;
    return access === 'open' ? 'open: no credential' : `token: ${access.join(' or ')}`;
  };
  const sorted = [...routes].sort(
    (a, b) => a.template.localeCompare(b.template) || a.methods.join(',').localeCompare(b.methods.join(',')),
  );
  return [
    `  HTTP       ${base}/api  (${header})`,
    ...sorted.map(
      (r) => `             ${r.methods.join(',').padEnd(5)} ${base}/${r.template}  [${r.functionName}, ${who(r)}]`,
    ),
  ];
}
