/**
 * Flex Consumption refuses settings that other plans take (test/support/flex-deprecations.ts):
 * over the resources each infra variant compiles to (infra/snapshots, kept current by
 * `npm run infra:check`), a Flex app sets none of them, in its app settings or its site
 * configuration, and its scale values are within Flex's documented limits.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { defaultTuning } from '../../shared/config/settings';
import { ingestBytes } from '../../shared/ingest/ingest-memory';
import { MemoryBudget } from '../../shared/util/memory-budget';
import {
  FLEX_LIMITS,
  FLEX_REJECTED_SETTINGS,
  FLEX_REJECTED_SITE_CONFIG,
  flexRejected,
} from '../support/flex-deprecations';
import { appSettingsOf, onlyOf, VARIANTS } from '../support/infra-snapshot';

const isFlex = (variant: (typeof VARIANTS)[number]): boolean =>
  onlyOf('Microsoft.Web/serverfarms', variant).sku?.tier === 'FlexConsumption';

interface SiteProperties {
  siteConfig?: Record<string, unknown>;
  functionAppConfig?: {
    runtime?: { name?: string; version?: string };
    scaleAndConcurrency?: {
      instanceMemoryMB?: number;
      maximumInstanceCount?: number;
      alwaysReady?: unknown[];
      triggers?: { http?: { perInstanceConcurrency?: number } };
    };
  } | null;
}
const siteOf = (variant: (typeof VARIANTS)[number]): SiteProperties =>
  onlyOf('Microsoft.Web/sites', variant).properties as SiteProperties;

void describe('infra: what Flex Consumption refuses is never set on Flex', () => {
  const flex = VARIANTS.filter(isFlex);

  void it('most variants deploy Flex, the premium one does not (the checks below see both kinds)', () => {
    assert.ok(flex.includes('default') && flex.length >= 2, `Flex variants: ${flex.join(', ')}`);
    assert.ok(!isFlex('premium'));
  });

  void it('no Flex variant sets an app setting Flex refuses', () => {
    for (const variant of flex) assert.deepEqual(flexRejected(appSettingsOf(variant)), [], variant);
  });

  void it('no Flex variant sets a site configuration property Flex refuses', () => {
    for (const variant of flex) {
      const config = siteOf(variant).siteConfig ?? {};
      assert.deepEqual(flexRejected(config, FLEX_REJECTED_SITE_CONFIG), [], variant);
    }
  });

  void it('the check sees a refused setting: Premium needs them, and a Flex app with one is caught, in any case', () => {
    // Premium runs from the package and names its runtime in app settings: the same check flags them.
    assert.deepEqual(flexRejected(appSettingsOf('premium')).sort(), [
      'FUNCTIONS_EXTENSION_VERSION',
      'FUNCTIONS_WORKER_RUNTIME',
      'WEBSITE_RUN_FROM_PACKAGE',
    ]);
    assert.deepEqual(flexRejected({ ...appSettingsOf('default'), website_run_from_package: '1' }), [
      'website_run_from_package',
    ]);
    assert.deepEqual(flexRejected({ linuxFxVersion: 'Node|22' }, FLEX_REJECTED_SITE_CONFIG), ['linuxFxVersion']);
    assert.ok(Object.keys(FLEX_REJECTED_SETTINGS).length >= 20);
  });

  void it("each Flex variant's runtime, memory and scale-out ceiling are within Flex's documented limits", () => {
    for (const variant of flex) {
      const config = siteOf(variant).functionAppConfig ?? assert.fail(`${variant}: no functionAppConfig`);
      assert.equal(config.runtime?.name, 'node', variant);
      const scale = config.scaleAndConcurrency ?? assert.fail(`${variant}: no scaleAndConcurrency`);
      assert.ok(
        (FLEX_LIMITS.instanceMemoryMB as readonly number[]).includes(scale.instanceMemoryMB ?? -1),
        `${variant}: instanceMemoryMB ${scale.instanceMemoryMB}`,
      );
      const max = scale.maximumInstanceCount ?? -1;
      assert.ok(
        max >= FLEX_LIMITS.maximumInstanceCount.min && max <= FLEX_LIMITS.maximumInstanceCount.max,
        `${variant}: maximumInstanceCount ${max}`,
      );
    }
  });

  void it("each Flex variant's HTTP concurrency is what its instance's memory budget holds of the largest batch", () => {
    // The largest batch at the body cap as admission counts it (gzip, at the inflation cap): a
    // request beyond what the budget holds would be answered 503, so Flex sends it elsewhere instead.
    const tuning = defaultTuning();
    const largest = Math.max(
      ingestBytes(tuning.maxBodyBytes, false, tuning),
      ingestBytes(tuning.maxBodyBytes, true, tuning),
    );
    const sizes = new Set<number>();
    for (const variant of flex) {
      const scale = siteOf(variant).functionAppConfig?.scaleAndConcurrency ?? assert.fail(variant);
      const memoryMb = scale.instanceMemoryMB ?? assert.fail(`${variant}: no instanceMemoryMB`);
      sizes.add(memoryMb);
      const budget = MemoryBudget.forInstance(memoryMb).limitBytes;
      const concurrency = scale.triggers?.http?.perInstanceConcurrency;
      assert.equal(concurrency, Math.max(1, Math.floor(budget / largest)), `${variant} at ${memoryMb} MB`);
      const { min, max } = FLEX_LIMITS.httpPerInstanceConcurrency;
      assert.ok(concurrency >= min && concurrency <= max, `${variant}: ${concurrency}`);
    }
    assert.ok(
      sizes.has(512) && sizes.has(2048),
      `both the smallest and the default size are compiled: ${[...sizes].join(', ')}`,
    );
  });
});
