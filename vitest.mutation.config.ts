import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

// What StrykerJS runs for each mutant (`npm run test:mutation`): the in-process tests, which are
// the ones that reach the guard and cache modules in this process. The end-to-end tests start
// other processes, where a mutant in this one is not seen, and cost seconds each.
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: ['test/app/**/*.test.ts'],
    exclude: [
      'node_modules/**',
      // Benchmarks and builds written as tests: they reach no guard module.
      'test/app/deploy.test.ts',
      'test/app/example-web.test.ts',
      'test/app/schema.test.ts',
    ],
  },
});
