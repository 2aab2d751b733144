// What the process does at start to keep its peak memory down.
import { createServer } from 'node:http';
import { Client } from 'undici';
import { close, listen, origin } from './loopback.js';

/**
 * undici parses HTTP with llhttp compiled to WebAssembly, and V8 compiles it on the first
 * connection, holding its compiler's memory for a moment. Left to the first upstream call,
 * that happens once the app is built and under the warm-up's load, and sets the process's peak
 * (docs/performance.md, "The parser's compile at start"). This makes one request over loopback to a server of its
 * own, never to the upstream, so that it happens before the app is built. It must run before
 * anything else makes an undici request. A machine without loopback skips it: the compile then
 * happens at the first call, as it would anyway.
 */
export async function compileHttpParser(): Promise<void> {
  const server = createServer((_request, response) => response.end());
  try {
    const client = new Client(origin(await listen(server)));
    try {
      await (await client.request({ path: '/', method: 'GET' })).body.dump();
    } finally {
      await client.close();
    }
  } catch {
    // No loopback here: nothing to do early.
  } finally {
    await close(server);
  }
}
