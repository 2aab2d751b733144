import { defineConfig } from 'vitest/config';

// `npm run test:browser`: GraphiQL, and urql and Apollo Client on pages of other origins, in
// Debian's Chromium, against the real process `npm start` runs.
// Kept out of `npm test` because it needs a system browser and takes a while to start.
export default defineConfig({
  test: {
    include: ['test/e2e/browser/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // One browser and one facade process at a time on two cores.
    fileParallelism: false,
  },
});
