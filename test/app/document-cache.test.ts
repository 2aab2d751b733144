import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { type DocumentShape, SHAPES } from '../../bench/documents.js';
import { createDocumentCaches } from '../../src/cache/documents.js';
import { postGraphQL, useHarness } from '../helpers/harness.js';

const MiB = 1024 * 1024;
const make = (shape: string, n: number) => {
  const found = SHAPES[shape];
  if (!found) throw new Error(`no shape ${shape}`);
  return found.make(n);
};

describe('the document caches (DOCUMENT_CACHE_BYTES)', () => {
  it('hold about their bound in the heap once filled with the worst documents', async () => {
    const setting = 8 * MiB;
    // In a process of its own, where a forced collection measures the heap they hold. Documents of
    // 1 MB fill it in a few entries, so a shape may hold well under it.
    const measure = async (shapes: readonly string[]) => {
      const { stdout } = await promisify(execFile)(
        process.execPath,
        ['--expose-gc', '--import', 'tsx', 'bench/documents.ts', String(setting), ...shapes],
        { cwd: fileURLToPath(new URL('../..', import.meta.url)), timeout: 400_000 },
      );
      return stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as DocumentShape);
    };
    // The heap is measured against an app that keeps nothing, whose own heap varies by a document
    // or two between runs: a shape of a few 1 MB entries can only be held to the upper bound.
    const outside = ({ heap, counted, entries }: DocumentShape) =>
      heap > 1.5 * setting || (entries >= 5 && heap < setting / 2) || counted > setting;
    const shapes = await measure([]);
    expect(shapes.map(({ shape }) => shape)).toEqual(Object.keys(SHAPES));
    // A process's heap can be off by an app once in a while: a shape outside is measured twice
    // more, and it is its median that must be inside.
    const doubtful = shapes.filter(outside).map(({ shape }) => shape);
    const again =
      doubtful.length > 0 ? [...(await measure(doubtful)), ...(await measure(doubtful))] : [];
    const medians = shapes.map((first) => {
      const heaps = [first, ...again.filter(({ shape }) => shape === first.shape)]
        .map(({ heap }) => heap)
        .sort((a, b) => a - b);
      return { ...first, heap: heaps[Math.floor(heaps.length / 2)] as number };
    });
    expect(
      medians
        .filter(outside)
        .map(({ shape, heap }) => `${shape}: ${(heap / setting).toFixed(2)} × the setting`),
    ).toEqual([]);
  }, 420_000);

  describe('in an app', () => {
    const setting = 2 * MiB;
    const caches = createDocumentCaches(setting);
    const h = useHarness({ config: { limits: { documentCacheBytes: setting } } });

    it('count no more than their setting, whatever each document holds', async () => {
      const app = h.createApp({ documentCaches: caches });
      const counted: number[] = [];
      for (const shape of Object.keys(SHAPES))
        for (let n = 0; n < 4; n++) {
          await postGraphQL(app, make(shape, n));
          counted.push(caches.bytes());
        }
      expect(Math.max(...counted)).toBeLessThanOrEqual(setting);
      // Something was kept each time: each shape fits in the bound.
      expect(Math.min(...counted)).toBeGreaterThan(0);
    });

    it('answer a repeated document as its first sending was answered', async () => {
      const app = h.createApp({ documentCaches: createDocumentCaches(setting) });
      for (const shape of Object.keys(SHAPES)) {
        const document = make(shape, 1000);
        const first = await postGraphQL(app, document);
        const again = await postGraphQL(app, document);
        expect({ shape, errors: again.errors }).toEqual({ shape, errors: first.errors });
        expect(again.data).toEqual(first.data);
      }
    });

    it('keep nothing at 0, and still answer', async () => {
      const none = createDocumentCaches(0);
      const app = h.createApp({ documentCaches: none });
      const valid = make('valid, 2.4 KB of fields', 1);
      for (let i = 0; i < 2; i++) {
        const answer = await postGraphQL(app, valid);
        expect(answer.data).toMatchObject({ repositories: { total: expect.any(Number) } });
      }
      expect([none.bytes(), none.entries()]).toEqual([0, 0]);
    });
  });
});
