import { describe, expect, it } from 'vitest';
import { compileHttpParser } from '../../src/process/memory.js';

describe("compileHttpParser (undici's parser compiled at start, before the app exists)", () => {
  const sockets = () =>
    process.getActiveResourcesInfo().filter((kind) => kind.startsWith('TCP')).length;

  it('makes its one request over loopback and leaves no server or connection open', async () => {
    const before = sockets();
    await compileHttpParser();
    // server.close() and the client's socket end on the next turns of the loop.
    await expect.poll(sockets, { interval: 10 }).toBe(before);
  });
});
