import { createRequire } from 'node:module';
import { defineConfig } from 'vitest/config';

const require = createRequire(import.meta.url);

export default defineConfig({
  resolve: {
    // graphql 16 ships CJS (`main`) and ESM (`module`). Node loads the CJS copy for our
    // dependencies while Vite would give our own files the ESM copy: two realms, and "Cannot use
    // GraphQLObjectType from another module or realm". Resolve it the way Node does.
    alias: [{ find: /^graphql$/, replacement: require.resolve('graphql') }],
  },
  test: {
    include: ['test/**/*.test.ts', 'sandbox/**/*.test.ts'],
    exclude: ['test/e2e/browser/**', 'node_modules/**'],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    globalSetup: ['test/helpers/fast-check-seed.ts'],
    // Several suites start real servers and child processes; two cores, so keep the fan-out small.
    maxWorkers: 2,
  },
});
