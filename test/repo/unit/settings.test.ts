import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, test } from 'node:test';

import { authSettings } from '../../../shared/config/auth-settings';
import { defaultTuning, loadSettings, TUNING_SPECS } from '../../../shared/config/settings';
import { ConfigError } from '../../../shared/errors';

const BASE = { StorageConnection: 'UseDevelopmentStorage=true' };

function configError(env: Record<string, string>): ConfigError {
  try {
    loadSettings(env);
  } catch (e) {
    assert.ok(e instanceof ConfigError, String(e));
    return e;
  }
  assert.fail('expected a ConfigError');
}

describe('settings', () => {
  test('defaults are documented values', () => {
    const s = loadSettings(BASE);
    assert.deepEqual(s.tuning, defaultTuning());
    assert.equal(s.tuning.dequeueBatchSize, 32);
    assert.equal(s.taxRates.EU, 2000);
    assert.equal(s.serviceBus, undefined);
  });
  test('a bad value names its setting', () => {
    assert.equal(configError({ ...BASE, PUSHDRAIN_DEQUEUE_BATCH_SIZE: '33' }).setting, 'PUSHDRAIN_DEQUEUE_BATCH_SIZE');
    assert.equal(configError({ ...BASE, PUSHDRAIN_PARTITIONS: 'four' }).setting, 'PUSHDRAIN_PARTITIONS');
    assert.equal(
      configError({ ...BASE, PUSHDRAIN_MIN_IDLE_MS: '500', PUSHDRAIN_MAX_IDLE_MS: '100' }).setting,
      'PUSHDRAIN_MAX_IDLE_MS',
    );
    assert.equal(configError({ ...BASE, PUSHDRAIN_NAME_PREFIX: 'Bad/Prefix' }).setting, 'PUSHDRAIN_NAME_PREFIX');
    assert.equal(configError({ ...BASE, PUSHDRAIN_TAX_RATES: 'EU:20000' }).setting, 'PUSHDRAIN_TAX_RATES');
    assert.equal(configError({}).setting, 'StorageConnection');
  });
  test('connection errors never echo the secret', () => {
    const secret = 'AccountKey=c2VjcmV0LXNob3VsZC1uZXZlci1sZWFr';
    const e = configError({ StorageConnection: `DefaultEndpointsProtocol=https;${secret}` });
    assert.ok(!e.message.includes('c2VjcmV0'), e.message);
    const e2 = configError({ ...BASE, ServiceBusConnection: `SharedAccessKeyName=x;SharedAccessKey=c2VjcmV0` });
    assert.ok(!e2.message.includes('c2VjcmV0'), e2.message);
  });
  test('identity-based connections', () => {
    const s = loadSettings({
      StorageConnection__accountName: 'acct1',
      StorageConnection__credential: 'managedidentity',
      StorageConnection__clientId: '00000000-0000-0000-0000-000000000001',
      ServiceBusConnection__fullyQualifiedNamespace: 'ns1.servicebus.windows.net',
    });
    assert.deepEqual(s.storage, {
      kind: 'identity',
      setting: 'StorageConnection',
      blobServiceUri: 'https://acct1.blob.core.windows.net',
      queueServiceUri: 'https://acct1.queue.core.windows.net',
      accountName: 'acct1',
      credential: 'managedidentity',
      clientId: '00000000-0000-0000-0000-000000000001',
    });
    assert.equal(s.serviceBus?.kind, 'identity');
    assert.equal(s.serviceBus?.fullyQualifiedNamespace, 'ns1.servicebus.windows.net');
  });
  test('StorageConnection falls back to AzureWebJobsStorage', () => {
    const s = loadSettings({
      AzureWebJobsStorage__blobServiceUri: 'https://a2.blob.core.windows.net',
      AzureWebJobsStorage__queueServiceUri: 'https://a2.queue.core.windows.net',
    });
    assert.equal(s.storage.setting, 'AzureWebJobsStorage');
    assert.equal(s.storage.accountName, 'a2');
  });
  test('tax rates can be configured', () => {
    assert.deepEqual(loadSettings({ ...BASE, PUSHDRAIN_TAX_RATES: 'EU:2100, NO:2500' }).taxRates, {
      EU: 2100,
      NO: 2500,
    });
  });
});

describe('documentation', () => {
  test('README lists every tuning setting with its real default and range', () => {
    let dir = __dirname;
    while (!existsSync(join(dir, 'package.json'))) dir = dirname(dir);
    const readme = readFileSync(join(dir, 'README.md'), 'utf8');
    const missing = TUNING_SPECS.filter(
      (s) => !readme.includes(`| \`${s.setting}\` | ${s.def} | ${s.min}–${s.max} |`),
    ).map((s) => s.setting);
    assert.deepEqual(missing, []);
  });
});

describe('PUSHDRAIN_AUTH and the token settings', () => {
  test('keys by default; entra needs the issuer, audience and an https (or loopback) JWKS, each named', () => {
    assert.equal(authSettings({}).mode, 'keys');
    assert.throws(() => authSettings({ PUSHDRAIN_AUTH: 'tokens' }), /PUSHDRAIN_AUTH: must be keys, entra or both/);
    assert.throws(() => authSettings({ PUSHDRAIN_AUTH: 'entra' }), /PUSHDRAIN_AUTH_AUDIENCE: is required/);
    const base = {
      PUSHDRAIN_AUTH: 'entra',
      PUSHDRAIN_AUTH_AUDIENCE: 'api://pushdrain, 0000-app-id',
      PUSHDRAIN_AUTH_ISSUER: 'https://login.microsoftonline.com/t/v2.0',
    };
    assert.throws(() => authSettings(base), /PUSHDRAIN_AUTH_JWKS_URL: is required/);
    assert.throws(
      () => authSettings({ ...base, PUSHDRAIN_AUTH_JWKS_URL: 'http://login.example/keys' }),
      /PUSHDRAIN_AUTH_JWKS_URL: must be https/,
    );
    const ok = authSettings({
      ...base,
      PUSHDRAIN_AUTH_JWKS_URL: 'https://login.microsoftonline.com/t/discovery/v2.0/keys',
    });
    assert.deepEqual(ok.tokens?.audiences, ['api://pushdrain', '0000-app-id']);
    assert.equal(
      authSettings({ ...base, PUSHDRAIN_AUTH_JWKS_URL: 'http://127.0.0.1:7072/discovery/v2.0/keys' }).mode,
      'entra',
    );
  });

  test('the status page MSAL config: derived when the audiences name an app id and an https issuer', () => {
    const base = {
      PUSHDRAIN_AUTH: 'entra',
      PUSHDRAIN_AUTH_ISSUER: 'https://login.microsoftonline.com/t/v2.0',
      PUSHDRAIN_AUTH_JWKS_URL: 'https://login.microsoftonline.com/t/discovery/v2.0/keys',
    };
    assert.equal(
      authSettings({ ...base, PUSHDRAIN_AUTH_AUDIENCE: 'api://pushdrain' }).signIn,
      undefined,
      'no client id',
    );
    const appId = '11111111-2222-3333-4444-555555555555';
    const derived = authSettings({ ...base, PUSHDRAIN_AUTH_AUDIENCE: `${appId},api://${appId}` }).signIn;
    assert.equal(derived?.clientId, appId);
    assert.deepEqual(derived?.scopes, [`api://${appId}/user_impersonation`]);
    assert.equal(derived?.authority, 'https://login.microsoftonline.com/t');
    assert.equal(authSettings({ ...base, PUSHDRAIN_AUTH_AUDIENCE: appId }).signIn, undefined, 'no api:// scope');
    const plain = authSettings({
      ...base,
      PUSHDRAIN_AUTH_ISSUER: 'http://127.0.0.1:7079/v2.0',
      PUSHDRAIN_AUTH_AUDIENCE: `${appId},api://${appId}`,
    });
    assert.equal(plain.signIn, undefined, 'MSAL takes an https authority only');
  });
});
