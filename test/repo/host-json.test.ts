/**
 * host.json against what the Functions host documents (tools/devstack/host/host-json-schema.ts):
 * the repository's passes, and a broken fixture fails with each key's path.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { checkHostJson } from '../../tools/devstack/host/host-json-schema';
import { readRepoFile } from '../support/repo';

const problems = (json: unknown): string[] => checkHostJson(json).map((p) => `${p.path}: ${p.message}`);

describe('host.json', () => {
  test("the repository's host.json has no unknown key and no value out of range", () => {
    assert.deepEqual(problems(JSON.parse(readRepoFile('host.json'))), []);
  });

  test('a broken host.json fails with the path of every bad key', () => {
    assert.deepEqual(problems(JSON.parse(readRepoFile('test/fixtures/host-json/broken.host.json'))), [
      'functionTimeout: must be from 1 s up, not "00:00:00.5"',
      'extensionBundle.version: must be a version range such as "[4.*, 5.0.0)", not "4.*"',
      'logging.logLevel.default: must be one of Trace, Debug, Information, Warning, Error, Critical, None, not "Info"',
      'extensions.serviceBus.maxConcurrentCall: is not a host.json setting (did you mean maxConcurrentCalls?)',
      'extensions.serviceBus.MaxAutoLockRenewalDuration: is spelled maxAutoLockRenewalDuration in the host.json reference',
      'extensions.serviceBus.prefetchCount: must be an integer from 0 up, not -1',
      'extensions.serviceBus.clientRetryOptions.mode: must be one of Exponential, Fixed, not "Linear"',
      'extensions.serviceBus.clientRetryOptions.delay: must be from 1 ms to 5 min, not "00:10:00"',
      'extensions.serviceBus.clientRetryOptions.maxRetries: must be an integer from 0 to 100, not 101',
      'extensions.serviceBus.clientRetryOptions.tryTimeout: must be from 0 to 60 min, not "02:00:00"',
      'extensions.htp: is not a host.json setting (did you mean http?)',
    ]);
  });

  test('telemetryMode OpenTelemetry beside Application Insights settings is refused; either alone passes', () => {
    const sampling = { applicationInsights: { samplingSettings: { isEnabled: true } } };
    assert.deepEqual(problems({ version: '2.0', telemetryMode: 'OpenTelemetry', logging: sampling }), [
      'logging.applicationInsights: configures nothing with telemetryMode OpenTelemetry: remove it (sample with OTEL_TRACES_SAMPLER)',
    ]);
    assert.deepEqual(problems({ version: '2.0', logging: sampling }), []);
    assert.deepEqual(problems({ version: '2.0', telemetryMode: 'OpenTelemetry', logging: { logLevel: {} } }), []);
    // The repository's: OpenTelemetry mode, and no classic sampling left beside it.
    const repo = JSON.parse(readRepoFile('host.json')) as { telemetryMode?: string; logging?: object };
    assert.equal(repo.telemetryMode, 'OpenTelemetry');
    assert.ok(!('applicationInsights' in (repo.logging ?? {})));
  });

  test('version is required, functionTimeout may be -1 (unbounded on Flex Consumption and Premium)', () => {
    assert.deepEqual(problems({ functionTimeout: '-1' }), ['version: is required ("2.0")']);
    assert.deepEqual(
      problems({ version: '2.0', functionTimeout: '-1', extensions: { http: { routePrefix: '' } } }),
      [],
    );
    assert.deepEqual(problems({ version: '1.0' }), ['version: must be one of 2.0, not "1.0"']);
  });
});
