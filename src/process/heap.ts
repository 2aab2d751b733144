import { setFlagsFromString } from 'node:v8';

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
