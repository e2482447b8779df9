// Type-aware lint over every TypeScript source; import order is enforced so diffs stay quiet.
import simpleImportSort from 'eslint-plugin-simple-import-sort';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'dist-*/**',
      'node_modules/**',
      '.azurite/**',
      'tools/bench/results/**',
      '**/*.mjs',
      '**/*.js',
    ],
  },
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { 'simple-import-sort': simpleImportSort },
    rules: {
      'simple-import-sort/imports': 'error',
      'simple-import-sort/exports': 'error',
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': ['error', { allow: ['warn', 'error', 'log'] }],
      // Settings are read in one place, shared/config, validated once (allowed list below).
      'no-restricted-properties': [
        'error',
        {
          object: 'process',
          property: 'env',
          message: 'Read settings through shared/config (loadSettings), not process.env.',
        },
      ],
      'no-restricted-imports': [
        'error',
        {
          paths: ['process', 'node:process'].map((name) => ({
            name,
            importNames: ['env'],
            message: 'Read settings through shared/config.',
          })),
        },
      ],
    },
  },
  {
    // Where process.env is legitimate: the settings module itself; the local launchers, which run
    // outside the Functions host and hand the environment on as the host would (npm start, the
    // redrive CLI, the brokers, Azurite, the local host, spoil-chunks); the bench's BENCH_VERBOSE switch; the
    // test helpers that start the host, npm or git as a child; the chaos and crash suites' CHAOS_* /
    // CRASH_* knobs for local soaks; the packager, which runs npm with the caller's environment; the
    // operator CLI (tools/cli/: its own PUSHDRAIN_URL/KEY and NO_COLOR; not part of the app), the test
    // helpers that run it or pick the browser, and the ones that run dotnet (PUSHDRAIN_DOTNET_TESTS,
    // the environment handed to the .NET programs).
    files: [
      'tools/cli/**/*.ts',
      'test/support/local-stack.ts',
      'test/support/browser.ts',
      'shared/config/**/*.ts',
      'tools/devstack/start.ts',
      'tools/devstack/scale/instance.ts',
      'tools/devstack/scale/serve.ts',
      'tools/devstack/azurite.ts',
      'tools/devstack/servicebus/main.ts',
      'tools/devstack/secondary-broker.ts',
      'tools/devstack/spoil-chunks.ts',
      'tools/devstack/host/local-host.ts',
      'tools/devstack/package.ts',
      'tools/bench/support/log.ts',
      'tools/bench/support/webjobs-peer.ts',
      'test/support/dotnet.ts',
      'test/support/host-process.ts',
      'tools/devstack/test/support/broker-process.ts',
      'test/deploy-readiness.test.ts',
      'tools/devstack/test/support/funcignore.ts',
      'tools/devstack/test/packaging.test.ts',
      'test/chaos.test.ts',
      'test/crash-soak.test.ts',
      'test/delivery-crash.test.ts',
    ],
    rules: { 'no-restricted-properties': 'off' },
  },
  {
    files: ['test/**/*.ts', 'tools/*/test/**/*.ts', 'tools/bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      // node:test's describe/test return promises the runner itself awaits.
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['describe', 'test', 'it', 'suite'] },
          ],
        },
      ],
    },
  },
);
