// What the document caches hold in the heap once the worst documents a caller can send have gone
// through the app, against DOCUMENT_CACHE_BYTES: each shape is sent to a fresh app until as many
// documents have been pushed out as are kept, then a forced collection says what stays.
// `node --expose-gc --import tsx bench/documents.ts [bytes] [shape…]` prints one JSON line per shape;
// test/app/document-cache.test.ts checks them.
import { startSandbox } from '../sandbox/server.js';
import { type AppDeps, createApp } from '../src/app.js';
import { createDocumentCaches } from '../src/cache/documents.js';
import { loadConfig } from '../src/config/load.js';
import { UpstreamClient } from '../src/upstream/client.js';

export interface DocumentShape {
  shape: string;
  /** DOCUMENT_CACHE_BYTES. */
  setting: number;
  /** Documents sent, each once. */
  sent: number;
  /** Heap growth after a forced collection, the app's caches alone. */
  heap: number;
  /** What the caches count. */
  counted: number;
  entries: number;
}

const collect = (globalThis as { gc?: () => void }).gc;
const KB = 1024;

/**
 * The heap once what is pending has run and forced collections free nothing more: an app a fill
 * has let go of may still be reachable from a task or microtask that has not run yet.
 */
async function settledHeap(): Promise<number> {
  const gc = collect as () => void;
  let heap = Number.POSITIVE_INFINITY;
  for (let round = 0; round < 10; round++) {
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    gc();
    const now = process.memoryUsage().heapUsed;
    if (now > heap - 64 * KB) return Math.min(now, heap);
    heap = now;
  }
  return heap;
}

/**
 * The worst documents within the default limits (1 MiB bodies, 2,000 tokens), each made distinct
 * by its number: text that is kept, trees of many tokens, errors by the thousand.
 */
export const SHAPES: Record<string, { make: (n: number) => string; runs?: number }> = {
  // Valid and executed, so graphql-jit compiles it: 2.4 KB of fields.
  'valid, 2.4 KB of fields': {
    make: (n) =>
      `query Q${n} { repositories(limit: 1) { total items { ${'id defaultBranch '.repeat(140)}} } }`,
  },
  // Valid, its name the whole text, each run with another page size: what a stage keeps per
  // document and per set of variables (the cost) must not hold a copy of the name each time.
  'valid, 1 MB operation name, 32 page sizes': {
    make: (n) =>
      `query Q${n}${'x'.repeat(1000 * KB)}($l: Int!) { repositories(limit: $l) { total } }`,
    runs: 32,
  },
  // Each unknown field is a validation error (graphql-js stops at 100), each field a node and a token.
  'invalid, 4 KB of 1,995 unknown fields': {
    make: (n) => `query Q${n} { ${'a '.repeat(1995)}}`,
  },
  'invalid, 1 MB, its text a string argument': {
    make: (n) => `query Q${n} { a(x: "${'x'.repeat(1000 * KB)}") ${'b '.repeat(1900)}}`,
  },
  // Refused by the token limit while parsing: the error is kept with the text.
  'fails to parse, 1 MB of tokens': {
    make: (n) => `query Q${n} { ${'a '.repeat(500 * KB)}}`,
  },
  'fails to parse, 1 MB string unterminated': {
    make: (n) => `query Q${n} { a(x: "${'x'.repeat(1000 * KB)}`,
  },
};

/** Sends `make`'s documents to a fresh app; what its caches then hold, after forced collections. */
async function fill(
  deps: Pick<AppDeps, 'config' | 'client'>,
  setting: number,
  { make, runs = 1 }: (typeof SHAPES)[string],
  count?: number,
) {
  const before = await settledHeap();
  const documentCaches = createDocumentCaches(setting);
  const app = createApp({ ...deps, documentCaches, logError: () => {} });
  let sent = 0;
  // Until as many documents have been pushed out as are kept.
  for (; count === undefined ? sent < 2 * documentCaches.entries() + 4 : sent < count; sent++) {
    const query = make(sent);
    for (let run = 1; run <= runs; run++) {
      const response = await app.fetch('http://facade/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query, variables: { l: run } }),
      });
      await response.text();
    }
  }
  const heap = (await settledHeap()) - before;
  // Kept reachable until after the measure.
  if (!app) throw new Error('no app');
  return { sent, heap, counted: documentCaches.bytes(), entries: documentCaches.entries() };
}

export async function fillDocuments(
  setting: number,
  names: readonly string[] = Object.keys(SHAPES),
): Promise<DocumentShape[]> {
  if (!collect) throw new Error('run with --expose-gc');
  const sandbox = await startSandbox({ repositories: 3 });
  const config = loadConfig({ UPSTREAM_URL: sandbox.url });
  const client = new UpstreamClient({ baseUrl: sandbox.url, ...config.upstream });
  const results: DocumentShape[] = [];
  try {
    for (const shape of names) {
      const make = SHAPES[shape];
      if (!make) throw new Error(`no shape ${shape}`);
      // An app that keeps nothing, sent the same documents, is the baseline: the app's own heap
      // and what a first request compiles are not the caches'.
      await fill({ config, client }, 0, make, 4);
      const kept = await fill({ config, client }, setting, make);
      const none = await fill({ config, client }, 0, make, kept.sent);
      results.push({ shape, setting, ...kept, heap: kept.heap - none.heap });
    }
  } finally {
    await client.close();
    await sandbox.close();
  }
  return results;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [bytes, ...names] = process.argv.slice(2);
  const setting = Number(bytes ?? 8 * 1024 * 1024);
  const shapes = names.length > 0 ? names : undefined;
  for (const result of await fillDocuments(setting, shapes)) console.log(JSON.stringify(result));
}
