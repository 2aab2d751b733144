import { execFile } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { compileHttpParser } from '../../src/process/memory.js';

const run = promisify(execFile);
const NODE_MAJOR = Number(process.versions.node.split('.')[0]);

/** How far (MB) the used heap grew past its live size in test/helpers/heap-churn.ts. */
async function growthMb(percent: number, nodeFlags: string[] = []): Promise<number> {
  const { stdout } = await run(process.execPath, [
    ...nodeFlags,
    '--expose-gc',
    '--import',
    'tsx',
    'test/helpers/heap-churn.ts',
    String(percent),
  ]);
  return Number(stdout.split(' ')[0]);
}

// Node 24's V8 sizes this heap its own way: the child grew by about 83 MB with 25 % and with V8's own
// policy alike (132 now and then, either way), and by 70-250 MB from run to run with the flag at 300
// on its command line, so neither comparison below means anything there (docs/performance.md,
// "Heap growth").
describe.skipIf(NODE_MAJOR === 24)(
  'HEAP_GROWTH_PERCENT (V8 collects the old generation before it grows far past its live size)',
  () => {
    it('keeps the heap near what is live where V8 alone lets it grow to several times that', async () => {
      const limited = await growthMb(25);
      // 60 MB live. V8's own policy grew the heap by about 230-240 MB on Node 20, 22 and 26, and
      // 25 % by about 85-100.
      expect(limited).toBeLessThan(130);
    }, 30_000);

    it("leaves the policy to node's own --heap-growing-percent when the operator gave one", async () => {
      const [given, limited] = await Promise.all([
        growthMb(25, ['--heap-growing-percent=300']),
        growthMb(25),
      ]);
      expect(given).toBeGreaterThan(150);
      expect(limited).toBeLessThan(given * 0.6);
    }, 30_000);
  },
);

describe("compileHttpParser (undici's parser compiled at start, before the app exists)", () => {
  const sockets = () =>
    process.getActiveResourcesInfo().filter((kind) => kind.startsWith('TCP')).length;

  it('makes its one request over loopback and leaves no server or connection open', async () => {
    const before = sockets();
    await compileHttpParser();
    // server.close() and the client's socket end on the next turns of the loop.
    for (let i = 0; i < 50 && sockets() > before; i++) await sleep(10);
    expect(sockets()).toBe(before);
  });
});
