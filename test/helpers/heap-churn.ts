// A child process for test/app/memory.test.ts: 60 MB that stays live, then 240 MB of garbage that
// lives long enough to be promoted to the old generation (as requests in flight are), with some
// work between allocations as a server has. Prints how far (MB) the used heap grew past what was
// live after a full collection.
import { getHeapStatistics } from 'node:v8';
import { limitHeapGrowth } from '../../src/process/memory.js';

limitHeapGrowth(Number(process.argv[2]));
const live = Array.from({ length: 60 }, () => new Array(1 << 17).fill({}));
(globalThis as { gc?: () => void }).gc?.();
const base = getHeapStatistics().used_heap_size;
const ring: number[][] = new Array(4000);
let peak = 0;
let work = 0;
for (let i = 0; i < 30_000; i++) {
  ring[i % ring.length] = new Array(1000).fill(i);
  for (let j = 0; j < 30_000; j++) work += j % 7;
  peak = Math.max(peak, getHeapStatistics().used_heap_size);
}
// The growth first; `live` and `work` are read here so that neither is optimised away.
process.stdout.write(`${Math.round((peak - base) / 1e6)} ${live.length} ${work}\n`);
