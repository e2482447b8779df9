/**
 * infra/ for Microsoft Entra ID: the app roles the preprovision hook registers are the app's, the
 * app settings point the app at the tenant's issuer and JWKS (entra by default, keys when asked),
 * App Service Authentication is not relied on, and the hook itself, run against stand-ins for `az`
 * and `azd` that record what they are asked, creates the registration, its roles, its service
 * principal, and assigns the operator roles only when PUSHDRAIN_ASSIGN_ADMIN=true.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, test } from 'node:test';

import { ROLES } from '../../shared/auth/principal';
import { authSettings } from '../../shared/config/auth-settings';
import { appSettingsOf, resourcesOf, VARIANTS } from '../support/infra-snapshot';
import { repoRoot } from '../support/repo';

interface AppRole {
  id: string;
  value: string;
  allowedMemberTypes: string[];
  isEnabled: boolean;
}
const rolesFile = (): AppRole[] =>
  (JSON.parse(readFileSync(join(repoRoot(), 'infra', 'entra-app-roles.json'), 'utf8')) as { appRoles: AppRole[] })
    .appRoles;

describe('infra: Microsoft Entra ID', () => {
  test('the registered app roles are the roles the app checks, for users and applications, with fixed distinct ids', () => {
    const roles = rolesFile();
    assert.deepEqual(roles.map((r) => r.value).sort(), [...ROLES].sort());
    assert.equal(new Set(roles.map((r) => r.id)).size, roles.length);
    for (const r of roles) {
      assert.match(r.id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      assert.deepEqual(r.allowedMemberTypes.sort(), ['Application', 'User']);
      assert.equal(r.isEnabled, true);
    }
  });

  test('app settings: entra by default with the tenant issuer and JWKS; the hook-set audiences; keys when asked', () => {
    const d = appSettingsOf('default');
    assert.equal(d.PUSHDRAIN_AUTH, 'entra');
    const tenant = '00000000-0000-0000-0000-00000000aaaa';
    assert.equal(
      d.PUSHDRAIN_AUTH_ISSUER,
      `[format('{0}{1}/v2.0', environment().authentication.loginEndpoint, '${tenant}')]`,
    );
    assert.equal(
      d.PUSHDRAIN_AUTH_JWKS_URL,
      `[format('{0}{1}/discovery/v2.0/keys', environment().authentication.loginEndpoint, '${tenant}')]`,
    );
    // The preprovision hook's values (the default snapshot sets them as the hook does).
    assert.equal(
      d.PUSHDRAIN_AUTH_AUDIENCE,
      '11111111-2222-3333-4444-555555555555,api://11111111-2222-3333-4444-555555555555',
    );
    const p = appSettingsOf('premium');
    assert.equal(p.PUSHDRAIN_AUTH, 'both');
    assert.equal(p.PUSHDRAIN_AUTH_AUDIENCE, '11111111-2222-3333-4444-555555555555');
    const k = appSettingsOf('scale-agent');
    assert.equal(k.PUSHDRAIN_AUTH, 'keys');
    assert.equal(k.PUSHDRAIN_AUTH_ISSUER, undefined);
  });

  test('the settings infra sets give the status page its MSAL config: this registration as the SPA, its scope, the tenant authority', () => {
    const tenant = '00000000-0000-0000-0000-00000000aaaa';
    const appId = '11111111-2222-3333-4444-555555555555';
    const auth = authSettings({
      PUSHDRAIN_AUTH: 'entra',
      PUSHDRAIN_AUTH_ISSUER: `https://login.microsoftonline.com/${tenant}/v2.0`,
      PUSHDRAIN_AUTH_AUDIENCE: `${appId},api://${appId}`,
      PUSHDRAIN_AUTH_JWKS_URL: `https://login.microsoftonline.com/${tenant}/discovery/v2.0/keys`,
    });
    assert.deepEqual(auth.signIn, {
      clientId: appId,
      authority: `https://login.microsoftonline.com/${tenant}`,
      scopes: [`api://${appId}/user_impersonation`],
      knownAuthorities: ['login.microsoftonline.com'],
    });
  });

  test('App Service Authentication is not configured (Flex Consumption does not enforce it; the app validates)', () => {
    for (const variant of VARIANTS) {
      const auth = resourcesOf('Microsoft.Web/sites/config', variant).filter((r) => /authsettings/i.test(r.name));
      assert.deepEqual(auth, [], variant);
    }
  });
});

interface FakeApp {
  appId: string;
  id: string;
  displayName: string;
}
const DEV_APP: FakeApp = { appId: 'app-1234', id: 'obj-1', displayName: 'pushdrain-dev' };

/**
 * Stand-ins for az and azd: each call is logged (with a --body file's content) and answered from a
 * table. `ad app list` answers `apps` whatever it is asked (as a prefix match would: the hook must
 * pick the exact name itself); `ad app show --id` knows those apps and the one `ad app create` makes.
 */
function fakeCli(apps: FakeApp[] | boolean): {
  bin: string;
  log: string;
  calls(): { cmd: string; args: string[]; body?: unknown }[];
} {
  const listed = apps === true ? [DEV_APP] : apps === false ? [] : apps;
  const appExists = listed.some((a) => a.appId === DEV_APP.appId);
  const bin = mkdtempSync(join(tmpdir(), 'pushdrain-fake-az-'));
  const log = join(bin, 'calls.jsonl');
  const script = (cmd: string): string => `#!/usr/bin/env node
const fs = require('node:fs');
const args = process.argv.slice(2);
const at = args.indexOf('--body');
const body = at >= 0 ? JSON.parse(fs.readFileSync(args[at + 1].slice(1), 'utf8')) : undefined;
fs.appendFileSync(${JSON.stringify(log)}, JSON.stringify({ cmd: ${JSON.stringify(cmd)}, args, body }) + '\\n');
const a = args.join(' ');
const out = (s) => process.stdout.write(s + '\\n');
const apps = ${JSON.stringify([...listed, ...(appExists ? [] : [DEV_APP])])};
if (a.startsWith('ad app list')) out(JSON.stringify(${JSON.stringify(listed)}));
else if (a.startsWith('ad app create')) out('app-1234');
else if (a.startsWith('ad app show')) {
  const app = apps.find((x) => x.appId === args[args.indexOf('--id') + 1]);
  if (!app) { process.stderr.write('ERROR: Resource does not exist\\n'); process.exit(3); }
  out(a.includes('-o json') ? JSON.stringify(app) : app.id);
}
else if (a.startsWith('ad sp list')) out(${appExists ? "'sp-1'" : "''"});
else if (a.startsWith('ad sp create')) out('sp-1');
else if (a.startsWith('ad signed-in-user show')) out('user-9');
else if (a.includes('--method GET')) out(JSON.stringify({ value: [] }));
else out('{}');
`;
  for (const cmd of ['az', 'azd']) {
    writeFileSync(join(bin, cmd), script(cmd));
    chmodSync(join(bin, cmd), 0o755);
  }
  return {
    bin,
    log,
    calls: () => {
      try {
        return readFileSync(log, 'utf8')
          .trim()
          .split('\n')
          .filter((l) => l !== '')
          .map((l) => JSON.parse(l) as { cmd: string; args: string[]; body?: unknown });
      } catch {
        return [];
      }
    },
  };
}

interface HookRun {
  status: number | null;
  stderr: string;
  /** Every call, as `cmd args…`. */
  lines: string[];
  /** The PATCH calls on an application. */
  patched: string[];
}

function runHook(bin: string, env: Record<string, string>): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [join(repoRoot(), 'infra', 'hooks', 'entra-app.mjs')], {
    encoding: 'utf8',
    timeout: 30_000,
    env: { PATH: `${bin}:${dirname(process.execPath)}:/usr/bin:/bin`, AZURE_ENV_NAME: 'dev', ...env },
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('infra/hooks/entra-app.mjs (azd preprovision)', () => {
  test('creates the registration with its roles, v2 tokens and api://<appId>, the service principal, the admin assignment when asked, and the azd values', () => {
    const fake = fakeCli(false);
    try {
      const r = runHook(fake.bin, { PUSHDRAIN_ASSIGN_ADMIN: 'true' });
      assert.equal(r.status, 0, r.stderr);
      const calls = fake.calls();
      const line = (c: { cmd: string; args: string[] }): string => `${c.cmd} ${c.args.join(' ')}`;
      assert.ok(calls.some((c) => line(c).startsWith('az ad app create --display-name pushdrain-dev')));
      const patch = calls.find((c) => line(c).includes('/applications/obj-1'));
      const app = patch?.body as { identifierUris: string[]; appRoles: AppRole[]; api: Record<string, unknown> };
      assert.deepEqual(app.identifierUris, ['api://app-1234']);
      assert.deepEqual(app.appRoles, rolesFile());
      assert.equal(app.api.requestedAccessTokenVersion, 2);
      assert.deepEqual(
        (app as unknown as { optionalClaims: { accessToken: { name: string }[] } }).optionalClaims.accessToken.map(
          (c) => c.name,
        ),
        ['idtyp'],
        'app-only tokens carry idtyp=app',
      );
      assert.ok(calls.some((c) => line(c).startsWith('az ad sp create --id app-1234')));
      const sp = calls.find((c) => line(c).includes('--method PATCH') && line(c).includes('/servicePrincipals/sp-1'));
      assert.deepEqual(sp?.body, { appRoleAssignmentRequired: true });
      const assigned = calls
        .filter(
          (c) => line(c).includes('--method POST') && line(c).includes('/servicePrincipals/sp-1/appRoleAssignedTo'),
        )
        .map((c) => c.body as { principalId: string; resourceId: string; appRoleId: string });
      const idOf = (v: string): string | undefined => rolesFile().find((x) => x.value === v)?.id;
      assert.deepEqual(
        assigned.map((a) => a.appRoleId).sort(),
        [idOf('Operations.Admin'), idOf('Batches.Read')].sort(),
      );
      for (const a of assigned) assert.deepEqual([a.principalId, a.resourceId], ['user-9', 'sp-1']);
      const azd = calls.filter((c) => c.cmd === 'azd').map(line);
      assert.deepEqual(azd, [
        'azd env set PUSHDRAIN_API_APP_ID app-1234',
        'azd env set PUSHDRAIN_API_IDENTIFIER_URI api://app-1234',
        'azd env set PUSHDRAIN_API_SCOPE api://app-1234/.default',
        // The apps registered here: the API itself (the status page) and the pre-authorized Azure CLI.
        'azd env set PUSHDRAIN_AUTH_CLIENT_APPS app-1234,04b07795-8ddb-461a-bbee-02f9e1bf7b46',
      ]);
      const consent = calls.find(
        (c) => line(c).includes('--method POST') && line(c).includes('/oauth2PermissionGrants'),
      );
      assert.deepEqual(
        consent?.body,
        { clientId: 'sp-1', consentType: 'AllPrincipals', resourceId: 'sp-1', scope: 'user_impersonation' },
        'admin consent for the status page, granted by the deployer',
      );
    } finally {
      rmSync(fake.bin, { recursive: true, force: true });
    }
  });

  test("the calling-app allowlist keeps the operator's own apps beside the registered ones", () => {
    const fake = fakeCli(true);
    try {
      const mine = '11111111-2222-3333-4444-555555555555';
      const r = runHook(fake.bin, { PUSHDRAIN_AUTH_CLIENT_APPS: ` ${mine.toUpperCase()} ,app-1234` });
      assert.equal(r.status, 0, r.stderr);
      const set = fake
        .calls()
        .filter((c) => c.cmd === 'azd' && c.args.includes('PUSHDRAIN_AUTH_CLIENT_APPS'))
        .map((c) => c.args.at(-1));
      assert.deepEqual(set, [`${mine},app-1234,04b07795-8ddb-461a-bbee-02f9e1bf7b46`]);
    } finally {
      rmSync(fake.bin, { recursive: true, force: true });
    }
  });

  test('the status page: a SPA redirect URI at the site’s /api/dashboard once the site is known (postprovision), the user_impersonation scope MSAL asks for, no implicit grant', () => {
    const fake = fakeCli(true);
    try {
      const before = runHook(fake.bin, {});
      assert.equal(before.status, 0, before.stderr);
      const first = fake.calls().find((c) => c.args.join(' ').includes('/applications/obj-1'));
      assert.equal((first?.body as Record<string, unknown>).spa, undefined, 'no site yet: no redirect URI');
      const after = runHook(fake.bin, { SERVICE_API_URI: 'https://func-abc.azurewebsites.net/' });
      assert.equal(after.status, 0, after.stderr);
      const patches = fake.calls().filter((c) => c.args.join(' ').includes('/applications/obj-1'));
      const app = patches.at(-1)?.body as {
        spa: { redirectUris: string[] };
        web?: unknown;
        api: { oauth2PermissionScopes: { value: string; type: string; isEnabled: boolean }[] };
      };
      assert.deepEqual(app.spa, { redirectUris: ['https://func-abc.azurewebsites.net/api/dashboard'] });
      assert.equal(app.web, undefined, 'no web platform (implicit grant) is configured');
      const scope = app.api.oauth2PermissionScopes.find((x) => x.value === 'user_impersonation');
      assert.equal(scope?.type, 'Admin', 'not user-consentable: a user cannot hand an app all of their roles');
      assert.equal(scope?.isEnabled, true);
      const bad = runHook(fake.bin, { SERVICE_API_URI: 'http://func-abc.azurewebsites.net' });
      assert.notEqual(bad.status, 0, 'a plain-http site is refused');
    } finally {
      rmSync(fake.bin, { recursive: true, force: true });
    }
    const azureYaml = readFileSync(join(repoRoot(), 'azure.yaml'), 'utf8');
    assert.match(azureYaml, /postprovision:\s+posix:\s+shell: sh\s+run: node infra\/hooks\/entra-app\.mjs/);
  });

  test('one registration per environment, found exactly: prefix matches are not adopted, two exact matches stop, the stored app id wins', () => {
    const line = (c: { cmd: string; args: string[] }): string => `${c.cmd} ${c.args.join(' ')}`;
    const patched = (calls: { cmd: string; args: string[] }[]): string[] =>
      calls.filter((c) => line(c).includes('--method PATCH') && line(c).includes('/applications/')).map(line);
    const others: FakeApp[] = [
      { appId: 'app-2', id: 'obj-2', displayName: 'pushdrain-dev2' },
      { appId: 'app-3', id: 'obj-3', displayName: 'pushdrain-dev-old' },
      { appId: 'app-4', id: 'obj-4', displayName: 'Pushdrain-Dev' },
    ];
    const cases: { label: string; apps: FakeApp[]; env?: Record<string, string>; check(r: HookRun): void }[] = [
      {
        label: 'only prefix matches: a new registration, none of theirs touched',
        apps: others,
        check: (r) => {
          assert.equal(r.status, 0, r.stderr);
          assert.ok(r.lines.some((l) => l.startsWith('az ad app create --display-name pushdrain-dev ')));
          assert.deepEqual(r.patched, [r.patched.find((l) => l.includes('/applications/obj-1'))]);
        },
      },
      {
        label: 'the exact name among prefix matches: that one, nothing created',
        apps: [...others, DEV_APP],
        check: (r) => {
          assert.equal(r.status, 0, r.stderr);
          assert.ok(!r.lines.some((l) => l.startsWith('az ad app create')));
          assert.equal(r.patched.length, 1);
          assert.match(r.patched[0] ?? '', /\/applications\/obj-1 /);
        },
      },
      {
        label: 'two owned apps with the exact name: stop, naming both, change nothing',
        apps: [DEV_APP, { appId: 'app-5', id: 'obj-5', displayName: 'pushdrain-dev' }, ...others],
        check: (r) => {
          assert.notEqual(r.status, 0);
          assert.match(r.stderr, /2 app registrations you own are named pushdrain-dev \(app-1234, app-5\)/);
          assert.match(r.stderr, /azd env set PUSHDRAIN_API_APP_ID/);
          assert.deepEqual(r.patched, []);
          assert.ok(!r.lines.some((l) => l.startsWith('az ad app create') || l.startsWith('azd ')));
        },
      },
      {
        label: 'the app id stored in the azd environment: used as it is, no listing by name',
        apps: [...others, DEV_APP, { appId: 'app-5', id: 'obj-5', displayName: 'pushdrain-dev' }],
        env: { PUSHDRAIN_API_APP_ID: 'app-5' },
        check: (r) => {
          assert.equal(r.status, 0, r.stderr);
          assert.ok(!r.lines.some((l) => l.startsWith('az ad app list') || l.startsWith('az ad app create')));
          assert.deepEqual(r.patched.length, 1);
          assert.match(r.patched[0] ?? '', /\/applications\/obj-5 /);
        },
      },
      {
        label: "a stored app id of another environment's app: stop, change nothing",
        apps: [...others, DEV_APP],
        env: { PUSHDRAIN_API_APP_ID: 'app-2' },
        check: (r) => {
          assert.notEqual(r.status, 0);
          assert.match(
            r.stderr,
            /PUSHDRAIN_API_APP_ID app-2 is the app registration "pushdrain-dev2", not pushdrain-dev/,
          );
          assert.deepEqual(r.patched, []);
          assert.ok(!r.lines.some((l) => l.startsWith('az ad app create') || l.startsWith('azd ')));
        },
      },
      {
        label: 'a stored app id that names no app: stop, change nothing',
        apps: [DEV_APP],
        env: { PUSHDRAIN_API_APP_ID: 'app-gone' },
        check: (r) => {
          assert.notEqual(r.status, 0);
          assert.match(r.stderr, /app-gone \(PUSHDRAIN_API_APP_ID\), which cannot be read/);
          assert.deepEqual(r.patched, []);
          assert.ok(!r.lines.some((l) => l.startsWith('az ad app create')));
        },
      },
    ];
    for (const c of cases) {
      const fake = fakeCli(c.apps);
      try {
        const r = runHook(fake.bin, c.env ?? {});
        const calls = fake.calls();
        try {
          c.check({ ...r, lines: calls.map(line), patched: patched(calls) });
        } catch (e) {
          throw new Error(`${c.label}: ${(e as Error).message}`, { cause: e });
        }
      } finally {
        rmSync(fake.bin, { recursive: true, force: true });
      }
    }
  });

  test('an existing registration is updated, not created again; no role is assigned unless asked; keys mode does nothing', () => {
    const fake = fakeCli(true);
    try {
      const r = runHook(fake.bin, {});
      assert.equal(r.status, 0, r.stderr);
      const lines = fake.calls().map((c) => `${c.cmd} ${c.args.join(' ')}`);
      assert.ok(!lines.some((l) => l.startsWith('az ad app create') || l.startsWith('az ad sp create')));
      assert.ok(lines.some((l) => l.includes('--method PATCH') && l.includes('/applications/obj-1')));
      assert.ok(!lines.some((l) => l.includes('appRoleAssignedTo') || l.includes('signed-in-user')));
    } finally {
      rmSync(fake.bin, { recursive: true, force: true });
    }
    const none = fakeCli(false);
    try {
      const r = runHook(none.bin, { PUSHDRAIN_AUTH: 'keys' });
      assert.equal(r.status, 0, r.stderr);
      assert.deepEqual(none.calls(), []);
    } finally {
      rmSync(none.bin, { recursive: true, force: true });
    }
  });
});
