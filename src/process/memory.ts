// What the process does at start to keep its peak memory down.
import { createServer } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { Client } from 'undici';
import { close, listen, origin } from './loopback.js';

const FLAG = '--heap-growing-percent';

/**
 * After each full collection V8 sets the size at which it collects the old generation next: what
 * was left live times a factor. With memory to spare that factor reaches 4, so a process whose
 * live heap stays flat still climbs to several times it, and its RSS with it, before each
 * collection; the facade's requests in flight, promoted by the young generation's collections, are
 * such garbage. This caps the factor at 1 + percent / 100 (docs/performance.md, "Heap growth").
 *
 * V8 reads the flag each time it sets that size, so it applies from the next full collection:
 * call it before the warm-up, whose garbage would otherwise set the process's peak. NODE_OPTIONS
 * cannot carry this flag; one given on node's own command line is the operator's and wins.
 */
export function limitHeapGrowth(percent: number): void {
  if (percent <= 0) return;
  // V8 takes its flags with hyphens or underscores alike.
  const given = process.execArgv.some((arg) => arg.replaceAll('_', '-').startsWith(FLAG));
  if (!given) setFlagsFromString(`${FLAG}=${percent}`);
}

/**
 * undici parses HTTP with llhttp compiled to WebAssembly, and V8 compiles it on the first
 * connection, holding its compiler's memory for a moment. Left to the first upstream call,
 * that happens once the app is built and under the warm-up's load, and sets the process's peak
 * (docs/performance.md, "Heap growth"). This makes one request over loopback to a server of its
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
