// azd preprovision hook: creates or updates the API's Microsoft Entra app registration, its app
// roles (infra/entra-app-roles.json), its service principal, and hands the app id to Bicep through
// the azd environment (PUSHDRAIN_API_APP_ID, PUSHDRAIN_API_IDENTIFIER_URI, PUSHDRAIN_API_SCOPE, and
// PUSHDRAIN_AUTH_CLIENT_APPS: the apps registered here beside the operator's own). Its scope takes an
// administrator's consent, which the hook grants for the status page.
// With PUSHDRAIN_ASSIGN_ADMIN=true it assigns Operations.Admin and Batches.Read to the signed-in
// user (an operator needs both: redrive, and the status page). Skipped with PUSHDRAIN_AUTH=keys.
// The status page signs people in with MSAL as this same registration (a SPA platform asking for
// its own user_impersonation scope): its redirect URI is the page, https://<site>/api/dashboard,
// known once the function app exists, so azd runs this hook again after provisioning
// (postprovision, with SERVICE_API_URI set) to add it.
//
// One registration per environment, found exactly, never adopted by accident: the app id the azd
// environment stored (PUSHDRAIN_API_APP_ID, set by an earlier run), if that app is named for this
// environment, else the deployer's own apps named exactly pushdrain-<env> (`--display-name` alone is a prefix match over the whole tenant:
// `dev` would find `pushdrain-dev2`, or another user's app). More than one stops the hook.
//
// A hook rather than the Microsoft Graph Bicep extension: the extension is restored from an OCI
// registry at build time, and `bicep build` must work offline here (docs/DESIGN.md). It runs `az`
// (Graph through `az rest`), so the deploying identity needs Application.ReadWrite.OwnedBy or an
// application administrator role, and AppRoleAssignment.ReadWrite.All for the admin assignment.
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const env = process.env;
const GRAPH = 'https://graph.microsoft.com/v1.0';
/** Azure CLI's public client: pre-authorized, so `az login` and DefaultAzureCredential get tokens for the API. */
const AZURE_CLI_APP_ID = '04b07795-8ddb-461a-bbee-02f9e1bf7b46';
/** The delegated scope people's tokens carry (app roles decide what they may do). */
const SCOPE_ID = '6a1f0c3e-5b1d-4b7e-9a0e-1c2d3e4f5a10';
const ROLES = JSON.parse(
  readFileSync(join(dirname(fileURLToPath(import.meta.url)), '..', 'entra-app-roles.json'), 'utf8'),
).appRoles;

function run(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', shell: process.platform === 'win32' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.slice(0, 3).join(' ')} failed: ${(r.stderr || r.stdout).trim()}`);
  return r.stdout.trim();
}

const az = (...args) => run('az', args);

function graph(method, path, body) {
  const args = ['rest', '--method', method, '--uri', `${GRAPH}${path}`, '--headers', 'Content-Type=application/json'];
  if (body === undefined) return az(...args);
  const file = join(tmpdir(), `pushdrain-graph-${process.pid}.json`);
  writeFileSync(file, JSON.stringify(body));
  try {
    return az(...args, '--body', `@${file}`);
  } finally {
    rmSync(file, { force: true });
  }
}

const APP_FIELDS = '{appId:appId, id:id, displayName:displayName}';

/**
 * This environment's registration, or none yet: by the app id the azd environment stored, else by
 * exact display name among the deployer's own apps. Throws when the stored id names no app, or when
 * more than one owned app has the name.
 */
function findRegistration(displayName) {
  const stored = (env.PUSHDRAIN_API_APP_ID ?? '').trim();
  if (stored) {
    let app;
    try {
      app = JSON.parse(az('ad', 'app', 'show', '--id', stored, '--query', APP_FIELDS, '-o', 'json'));
    } catch {
      throw new Error(
        `the azd environment names app registration ${stored} (PUSHDRAIN_API_APP_ID), which cannot be read: ` +
          'sign in to its tenant, or clear it with azd env set PUSHDRAIN_API_APP_ID "" to find or create one by name',
      );
    }
    if (app?.appId !== stored || !app.id) throw new Error(`az ad app show --id ${stored} did not return that app`);
    // The hook rewrites the app's roles, scope and redirect URI: never another environment's or a stranger's app.
    if (app.displayName !== displayName)
      throw new Error(
        `PUSHDRAIN_API_APP_ID ${stored} is the app registration "${app.displayName}", not ${displayName}: ` +
          'clear it with azd env set PUSHDRAIN_API_APP_ID "" (or rename the app) so that this environment uses its own',
      );
    return { appId: app.appId, objectId: app.id };
  }
  const mine = JSON.parse(az('ad', 'app', 'list', '--show-mine', '--query', `[].${APP_FIELDS}`, '-o', 'json') || '[]');
  // Compared here, exactly: whatever the listing matched, only this name counts.
  const named = (Array.isArray(mine) ? mine : []).filter((a) => a && a.displayName === displayName);
  if (named.length > 1)
    throw new Error(
      `${named.length} app registrations you own are named ${displayName} (${named.map((a) => a.appId).join(', ')}): ` +
        'choose one with azd env set PUSHDRAIN_API_APP_ID <appId>, and delete or rename the others',
    );
  return named[0] ? { appId: named[0].appId, objectId: named[0].id } : { appId: '', objectId: '' };
}

/**
 * The scope needs an administrator's consent, so the status page (this registration signing in for
 * its own scope) gets it here, tenant-wide, once. Without the right to grant it the hook goes on and
 * says what an administrator runs.
 */
function consentForStatusPage(spId) {
  const filter = encodeURIComponent(`clientId eq '${spId}' and resourceId eq '${spId}'`);
  try {
    const grants = JSON.parse(graph('GET', `/oauth2PermissionGrants?$filter=${filter}`)).value ?? [];
    if (
      grants.some((g) => g.consentType === 'AllPrincipals' && String(g.scope).split(' ').includes('user_impersonation'))
    )
      return;
    graph('POST', '/oauth2PermissionGrants', {
      clientId: spId,
      consentType: 'AllPrincipals',
      resourceId: spId,
      scope: 'user_impersonation',
    });
    console.log('entra-app: granted admin consent for the status page (user_impersonation)');
  } catch (e) {
    console.warn(
      `entra-app: could not grant admin consent for the status page's sign-in (${e.message.split('\n')[0]}); ` +
        `an administrator grants it with: az rest --method POST --uri ${GRAPH}/oauth2PermissionGrants ` +
        `--body '{"clientId":"${spId}","consentType":"AllPrincipals","resourceId":"${spId}","scope":"user_impersonation"}'`,
    );
  }
}

function main() {
  const mode = (env.PUSHDRAIN_AUTH ?? 'entra').trim().toLowerCase();
  if (mode === 'keys') {
    console.log('entra-app: PUSHDRAIN_AUTH=keys, no app registration needed');
    return;
  }
  const envName = env.AZURE_ENV_NAME;
  if (!envName) throw new Error('AZURE_ENV_NAME is not set (run through azd)');
  const displayName = `pushdrain-${envName}`;
  let { appId, objectId } = findRegistration(displayName);
  if (!appId) {
    appId = az(
      'ad',
      'app',
      'create',
      '--display-name',
      displayName,
      '--sign-in-audience',
      'AzureADMyOrg',
      '--query',
      'appId',
      '-o',
      'tsv',
    );
    console.log(`entra-app: created the app registration ${displayName} (${appId})`);
    objectId = az('ad', 'app', 'show', '--id', appId, '--query', 'id', '-o', 'tsv');
  }
  const identifierUri = `api://${appId}`;
  const site = (env.SERVICE_API_URI ?? '').trim().replace(/\/+$/, '');
  if (site && !/^https:\/\/[A-Za-z0-9.-]+(:\d+)?$/.test(site))
    throw new Error(`SERVICE_API_URI must be the site's https origin, got ${site}`);
  graph('PATCH', `/applications/${objectId}`, {
    identifierUris: [identifierUri],
    // Auth code flow with PKCE from the browser; no implicit grant, no secret.
    ...(site ? { spa: { redirectUris: [`${site}/api/dashboard`] } } : {}),
    appRoles: ROLES,
    // App-only tokens then say so (idtyp=app): the app tells them from a user's without inferring it.
    optionalClaims: { accessToken: [{ name: 'idtyp', essential: false }], idToken: [], saml2Token: [] },
    api: {
      requestedAccessTokenVersion: 2,
      oauth2PermissionScopes: [
        {
          id: SCOPE_ID,
          value: 'user_impersonation',
          // Admin consent only: a user cannot hand an app of their choice all of their roles.
          type: 'Admin',
          isEnabled: true,
          adminConsentDisplayName: 'Access pushdrain',
          adminConsentDescription: 'Call pushdrain as the signed-in user; app roles decide what is allowed.',
        },
      ],
      preAuthorizedApplications: [{ appId: AZURE_CLI_APP_ID, delegatedPermissionIds: [SCOPE_ID] }],
    },
  });
  let spId = az('ad', 'sp', 'list', '--filter', `appId eq '${appId}'`, '--query', '[0].id', '-o', 'tsv');
  if (!spId) spId = az('ad', 'sp', 'create', '--id', appId, '--query', 'id', '-o', 'tsv');
  // Tokens only for principals that were assigned a role: an unassigned client of the tenant gets none.
  graph('PATCH', `/servicePrincipals/${spId}`, { appRoleAssignmentRequired: true });
  consentForStatusPage(spId);

  if ((env.PUSHDRAIN_ASSIGN_ADMIN ?? '').toLowerCase() === 'true') {
    const userId = az('ad', 'signed-in-user', 'show', '--query', 'id', '-o', 'tsv');
    const held = JSON.parse(graph('GET', `/servicePrincipals/${spId}/appRoleAssignedTo`)).value ?? [];
    for (const value of ['Operations.Admin', 'Batches.Read']) {
      const role = ROLES.find((r) => r.value === value);
      if (held.some((a) => a.principalId === userId && a.appRoleId === role.id)) continue;
      graph('POST', `/servicePrincipals/${spId}/appRoleAssignedTo`, {
        principalId: userId,
        resourceId: spId,
        appRoleId: role.id,
      });
      console.log(`entra-app: assigned ${value} to the signed-in user`);
    }
  }
  // The calling apps the API accepts: the ones registered here (the status page signs in as the API's
  // own registration; the Azure CLI is pre-authorized for the CLI and scripts), plus the operator's.
  const clientApps = [
    ...new Set(
      [...(env.PUSHDRAIN_AUTH_CLIENT_APPS ?? '').split(','), appId, AZURE_CLI_APP_ID]
        .map((a) => a.trim().toLowerCase())
        .filter((a) => a !== ''),
    ),
  ];
  run('azd', ['env', 'set', 'PUSHDRAIN_API_APP_ID', appId]);
  run('azd', ['env', 'set', 'PUSHDRAIN_API_IDENTIFIER_URI', identifierUri]);
  run('azd', ['env', 'set', 'PUSHDRAIN_API_SCOPE', `${identifierUri}/.default`]);
  run('azd', ['env', 'set', 'PUSHDRAIN_AUTH_CLIENT_APPS', clientApps.join(',')]);
  console.log(
    `entra-app: ${displayName} ready, scope ${identifierUri}/.default` +
      (site ? `; status page sign-in redirects to ${site}/api/dashboard` : ''),
  );
}

try {
  main();
} catch (e) {
  console.error(`entra-app: ${e.message}`);
  process.exit(1);
}
