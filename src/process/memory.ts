// What the process does at start to keep its peak memory down.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from 'undici';

/**
 * undici parses HTTP with llhttp compiled to WebAssembly, and V8 compiles it on the first
 * connection, holding its compiler's memory for a moment. Left to the first upstream call, that
 * happens once the app is built and under load, and sets the process's peak (docs/performance.md,
 * "After idle"). This makes one request over loopback to a server of its own, never to the
 * upstream, so that it happens before the app is built. It must run before anything else makes an
 * undici request. A machine without loopback skips it: the compile then happens at the first
 * call, as it would anyway.
 */
export async function compileHttpParser(): Promise<void> {
  const server = createServer((_request, response) => response.end());
  try {
    // Exclusive: in a cluster worker a plain listen(0) is routed through the primary, which gives
    // every worker's listen(0) on an address the same shared port, the real server's too with PORT=0.
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ port: 0, host: '127.0.0.1', exclusive: true }, resolve);
    });
    const { port } = server.address() as AddressInfo;
    const client = new Client(`http://127.0.0.1:${port}`);
    try {
      await (await client.request({ path: '/', method: 'GET' })).body.dump();
    } finally {
      await client.close();
    }
  } catch {
    // No loopback here: nothing to do early.
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
