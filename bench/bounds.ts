// What the in-memory caches hold in the heap once filled, against RESPONSE_CACHE_BYTES: each
// shape fills a fresh store past its bound, then a forced collection says what it holds.
// `node --expose-gc --import tsx bench/bounds.ts [bytes...]` prints one JSON line per shape;
// `npm run bench -- --bounds` prints them as a table (bench/run.ts), and test/app/memory.test.ts
// checks them.
import { spawnSync } from 'node:child_process';
import { hash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { seedRepository } from '../sandbox/data.js';
import { memoryBounds } from '../src/cache/heap.js';
import { type Answer, createMemoryResponseStore } from '../src/cache/response-store.js';
import { createRangeCache } from '../src/read/ranges.js';
import type { CachePolicy } from '../src/upstream/cache-policy.js';
import { decodeRepositoryList, type RepositoryList } from '../src/upstream/repository-list.js';

export interface Filled {
  store: 'ranges' | 'answers';
  shape: string;
  /** RESPONSE_CACHE_BYTES. */
  setting: number;
  /** What bounds this shape: the setting, or one caller's share of it. */
  bound: number;
  /** Whether the shape offers enough to reach its bound (not so of ranges that collapse). */
  fills: boolean;
  /** Heap growth after a forced collection, the store alone. */
  heap: number;
  /** What the store counts, where it says. */
  counted: number | undefined;
  entries: number;
}

const collect = (globalThis as { gc?: () => void }).gc;
const POLICY: CachePolicy = { maxAge: 3600, scope: 'PRIVATE' };
const token = (n: number) => hash('sha256', `token ${n}`, 'base64url');

/** A page of the repository list as the client decodes it from the upstream's text. */
function page(account: string, start: number, count: number, total: number): RepositoryList {
  const repositories = Array.from({ length: Math.max(0, Math.min(count, total - start)) }, (_, i) =>
    seedRepository(account, start + i),
  );
  const text = JSON.stringify({ repositories, total, offset: start });
  return decodeRepositoryList(JSON.parse(text));
}

/** An answer as the response cache keeps it: its data, its policy. */
const answer = (data: unknown): Answer => ({
  result: { data: data as Answer['result']['data'] },
  policy: { ...POLICY },
});

/** Heap growth of what `fill` returns (and keeps), after forced collections. */
function measure(fill: () => { kept: unknown; counted?: number; entries: number }) {
  if (!collect) throw new Error('run with --expose-gc');
  collect();
  collect();
  const before = process.memoryUsage().heapUsed;
  const { kept, counted, entries } = fill();
  collect();
  collect();
  const heap = process.memoryUsage().heapUsed - before;
  // Kept reachable until after the measure.
  if (kept === undefined) throw new Error('nothing kept');
  return { heap, counted, entries };
}

/** Offers entries until the JSON length offered passes 1.25 × `limit`. */
function offer(limit: number, each: (n: number) => number) {
  let offered = 0;
  let n = 0;
  while (offered < limit * 1.25) offered += each(n++);
  return n;
}

const json = (value: unknown) => JSON.stringify(value).length;

export function fillBounds(setting: number): Filled[] {
  const { share } = memoryBounds(setting);
  const results: Filled[] = [];
  const run = (
    store: Filled['store'],
    shape: string,
    bound: number,
    fills: boolean,
    fill: () => { kept: unknown; counted?: number; entries: number },
  ) => {
    results.push({ store, shape, setting, bound, fills, ...measure(fill) });
  };
  const caller = (n: number) => ({ authorization: `Bearer ${token(n)}`, forwarded: {} });
  const now = Date.now();

  run(
    'ranges',
    'one caller, empty ranges past the end, offsets counting down',
    share,
    false,
    () => {
      const ranges = createRangeCache(setting);
      const call = caller(0);
      const entries = offer(setting, (n) => {
        const start = 1e8 - 5 * n;
        ranges.keep(call, page('a', start, 5, 50), start, { ...POLICY }, now);
        return 72;
      });
      return { kept: ranges, counted: ranges.bytes, entries };
    },
  );
  run('ranges', 'one caller, ranges of 1 to 5 items scattered', share, true, () => {
    const ranges = createRangeCache(setting);
    const call = caller(0);
    const entries = offer(setting, (n) => {
      const start = (n * 7919) % 100_000;
      const list = page('a', start, 1 + (n % 5), 100_000);
      ranges.keep(call, list, start, { ...POLICY }, now);
      return json(list.repositories) + 60;
    });
    return { kept: ranges, counted: ranges.bytes, entries };
  });
  run('ranges', 'callers with an empty range each', setting, true, () => {
    const ranges = createRangeCache(setting);
    const entries = offer(setting, (n) => {
      ranges.keep(caller(n), page('a', 1e8, 5, 50), 1e8, { ...POLICY }, now);
      return 150;
    });
    return { kept: ranges, counted: ranges.bytes, entries };
  });
  run('ranges', 'callers with a range of 50 items each', setting, true, () => {
    const ranges = createRangeCache(setting);
    const full = page('a', 0, 50, 1000);
    const entries = offer(setting, (n) => {
      // Each caller's own items, decoded from its own answer.
      const list = n === 0 ? full : page(`a${n}`, 0, 50, 1000);
      ranges.keep(caller(n), list, 0, { ...POLICY }, now);
      return json(list.repositories) + 150;
    });
    return { kept: ranges, counted: ranges.bytes, entries };
  });

  const key = (session: string, n: number) => `${session}:${token(-n - 1)}`;
  run('answers', 'sessions with a tiny answer each', setting, true, () => {
    const store = createMemoryResponseStore(setting);
    const entries = offer(setting, (n) => {
      const k = key(token(n), n);
      store.set(k, answer({ viewer: { id: n } }), now);
      return k.length + 40;
    });
    return { kept: store, entries };
  });
  run('answers', 'one session, many tiny answers', share, true, () => {
    const store = createMemoryResponseStore(setting);
    const session = token(0);
    const entries = offer(setting, (n) => {
      const k = key(session, n);
      store.set(k, answer({ viewer: { id: n } }), now);
      return k.length + 40;
    });
    return { kept: store, entries };
  });
  run('answers', 'sessions with an answer of 20 repositories each', setting, true, () => {
    const store = createMemoryResponseStore(setting);
    const entries = offer(setting, (n) => {
      const data = { repositories: page(`s${n}`, 0, 20, 1000) };
      const k = key(token(n), n);
      store.set(k, answer(data), now);
      return k.length + json(data);
    });
    return { kept: store, entries };
  });
  run(
    'answers',
    'a few large answers (200 repositories each), four a session',
    setting,
    true,
    () => {
      const store = createMemoryResponseStore(setting);
      const entries = offer(setting, (n) => {
        const data = { repositories: page(`s${n}`, 0, 200, 1000) };
        const k = key(token(n >> 2), n);
        store.set(k, answer(data), now);
        return k.length + json(data);
      });
      return { kept: store, entries };
    },
  );
  return results;
}

/** What `npm run bench -- --bounds` prints: the shapes at 4 MiB and at the default 32 MiB. */
export function reportBounds(): void {
  const run = spawnSync(
    process.execPath,
    ['--expose-gc', '--import', 'tsx', fileURLToPath(import.meta.url)],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
  );
  if (run.status !== 0) throw new Error(`bench/bounds.ts exited with ${run.status}`);
  const MiB = 1024 * 1024;
  const rows = run.stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Filled)
    .map(({ store, shape, setting, bound, heap, counted }) => ({
      store,
      shape,
      'setting (MiB)': setting / MiB,
      'bound (MiB)': Number((bound / MiB).toFixed(2)),
      'heap held (MiB)': Number((heap / MiB).toFixed(2)),
      'held / setting': Number((heap / setting).toFixed(2)),
      // Of a store that holds next to nothing, the ratio says only how noisy the measure is.
      'held / counted':
        counted && counted > setting / 100 ? Number((heap / counted).toFixed(2)) : '',
    }));
  console.table(rows);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const settings = process.argv.slice(2).map(Number);
  // Once small first, so that compiling the code is not counted as the first shape's.
  fillBounds(1024 * 1024);
  for (const setting of settings.length ? settings : [4 * 1024 * 1024, 32 * 1024 * 1024]) {
    for (const filled of fillBounds(setting)) console.log(JSON.stringify(filled));
  }
}
