import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import type { Filled } from '../../bench/bounds.js';

describe('the in-memory caches (RESPONSE_CACHE_BYTES)', () => {
  it('hold about what their bound says once filled, whatever the shape of what they keep', async () => {
    const setting = 8 * 1024 * 1024;
    // In a process of its own, where a forced collection measures the heap they hold.
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--expose-gc', '--import', 'tsx', 'bench/bounds.ts', String(setting)],
      { cwd: fileURLToPath(new URL('../..', import.meta.url)), timeout: 240_000 },
    );
    const shapes = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Filled);
    expect(shapes.length).toBeGreaterThan(5);
    // A shape that cannot reach its bound (empty ranges past the end collapse into one) holds less.
    const outside = shapes
      .filter(({ bound, fills, heap }) => heap > 1.5 * bound || (fills && heap < bound / 1.5))
      .map(
        ({ store, shape, bound, heap }) =>
          `${store}, ${shape}: ${(heap / bound).toFixed(2)} × its bound`,
      );
    expect(outside).toEqual([]);
  }, 300_000);
});
