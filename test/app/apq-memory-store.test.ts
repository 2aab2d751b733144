import { createHash } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { type ApqStore, createMemoryApqStore } from '../../src/security/use-apq.js';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

// A forced collection, without starting the test process with --expose-gc.
setFlagsFromString('--expose-gc');
const collect = runInNewContext('gc') as () => void;

/** The heap `fill` leaves behind it, what it returns kept alive, after forced collections. */
function heapGrowth(fill: () => unknown): number {
  collect();
  collect();
  const before = process.memoryUsage().heapUsed;
  const kept = fill();
  collect();
  collect();
  const grown = process.memoryUsage().heapUsed - before;
  expect(kept).toBeDefined();
  return grown;
}

describe('the memory APQ store', () => {
  it('keeps the most recently used documents within its bound', async () => {
    const doc = (n: number) => `{ a${n} }`.padEnd(40, ' ');
    // Room for two entries (hashes and documents, and what the heap holds for each).
    const store = createMemoryApqStore(2 * (64 + 40 + 160) + 50);
    await store.set(sha256(doc(1)), doc(1));
    await store.set(sha256(doc(2)), doc(2));
    expect(await store.get(sha256(doc(1)))).toBe(doc(1));
    await store.set(sha256(doc(3)), doc(3));
    expect(await store.get(sha256(doc(2)))).toBeNull();
    expect(await store.get(sha256(doc(1)))).toBe(doc(1));
    expect(await store.get(sha256(doc(3)))).toBe(doc(3));
    // A document larger than the whole bound is not kept.
    await store.set(sha256('x'), 'x'.repeat(1_000));
    expect(await store.get(sha256('x'))).toBeNull();
  });

  it('keeps nothing with a bound of 0', async () => {
    const store = createMemoryApqStore(0);
    await store.set(sha256('{ a }'), '{ a }');
    expect(await store.get(sha256('{ a }'))).toBeNull();
  });

  // APQ_CACHE_BYTES promises heap, whatever the documents look like: each shape is written past
  // twice the bound, as they come in requests (parsed from JSON).
  const bound = 8 * 1024 * 1024;
  it.each([
    { shape: 'tiny documents', count: 120_000, size: 8, text: '' },
    { shape: 'documents of 1 kB', count: 20_000, size: 1_000, text: '' },
    { shape: 'documents of 60 kB', count: 300, size: 60_000, text: '' },
    { shape: 'documents of 1 kB past Latin-1', count: 10_000, size: 1_000, text: ' é€' },
  ])('holds the heap to its bound within 1.5 times: $shape', ({ count, size, text }) => {
    let store: ApqStore | undefined;
    const grown = heapGrowth(() => {
      store = createMemoryApqStore(bound);
      for (let i = 0; i < count; i++) {
        const document = JSON.parse(JSON.stringify(`{ q${i}${text} }`.padEnd(size, ' '))) as string;
        store.set(sha256(document), document);
      }
      return store;
    });
    expect(grown).toBeGreaterThan(bound / 1.5);
    expect(grown).toBeLessThan(bound * 1.5);
  });
});
