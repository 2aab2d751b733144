import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from 'undici';

/**
 * Compiles undici's WebAssembly HTTP parser with one loopback request, before the app's modules
 * load (docs/performance.md#memory). Without loopback, the first upstream call does it.
 */
export async function compileHttpParser(): Promise<void> {
  const server = createServer((_request, response) => response.end());
  try {
    // Exclusive: a worker's plain listen(0) would share the primary's port, the real server's too.
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
    // No loopback: the first upstream call compiles it.
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
