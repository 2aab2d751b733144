import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    // Several suites start real servers and child processes; two cores, so keep the fan-out small.
    maxWorkers: 2,
  },
});
