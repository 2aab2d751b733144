// What the memory caches hold, counted as V8 holds it on 64 bits, and how a bound is shared between
// callers: docs/caching.md#bounds. The figures are calibrated by bench/bounds.ts; re-measure there
// before changing one.
import { LRUCache } from 'lru-cache';

/** A pointer or small integer on 64 bits, with pointer compression off. */
export const SLOT = 8;
const align = (bytes: number) => Math.ceil(bytes / SLOT) * SLOT;
/** A string: its header, then a byte a character, or two once one is past Latin-1. */
export const stringBytes = (text: string) =>
  align(16 + (/[\u0100-\uffff]/.test(text) ? 2 * text.length : text.length));
/** lru-cache's own per entry: its key map's entry and a slot in each of its arrays. */
export const LRU_ENTRY_BYTES = 128;
/** A Map or Set of a few entries (one more entry is MAP_ENTRY_BYTES). */
export const MAP_BYTES = 160;
export const MAP_ENTRY_BYTES = 56;
/** A key sliced from another string (the slice keeps the whole string alive). */
export const SLICE_BYTES = 32;
/** V8 slices a substring this long or longer; a shorter one is a copy. */
export const SLICE_MIN_LENGTH = 13;
/** A CachePolicy: a record of a few numbers, and its scope (a string every policy shares). */
export const POLICY_BYTES = 64;

/** The slots of an array grown by push: V8 adds half and 16. */
function slots(length: number): number {
  let capacity = 0;
  while (capacity < length) capacity += (capacity >> 1) + 16;
  return capacity;
}

/** What a JSON-like value holds in the heap, not counting the slot that points to it. */
export function heapBytes(value: unknown): number {
  if (typeof value === 'string') return stringBytes(value);
  // A small integer lives in its slot; any other number is a heap number.
  if (typeof value === 'number')
    return Number.isInteger(value) && Math.abs(value) < 2 ** 31 ? 0 : 16;
  if (typeof value !== 'object' || value === null) return 0;
  let bytes = 0;
  if (Array.isArray(value)) {
    bytes = value.length === 0 ? 32 : 48 + SLOT * slots(value.length);
    for (const item of value) bytes += heapBytes(item);
    return bytes;
  }
  bytes = 24;
  for (const key in value) bytes += SLOT + heapBytes((value as Record<string, unknown>)[key]);
  return bytes;
}

/** A memory store's `maxBytes`: a sixteenth for eviction records, the rest for entries. */
export function memoryBounds(maxBytes: number) {
  const records = Math.floor(maxBytes / 16);
  const entries = maxBytes - records;
  return { records, entries, share: callerShare(maxBytes, entries) };
}

/** What one caller may take of `bound`: an eighth, at least 1 MiB, at most `room`. */
export const callerShare = (bound: number, room = bound) =>
  Math.min(room, Math.max(Math.floor(bound / 8), 1024 * 1024));

// Longer than a read runs: a read that runs longer is refused once its record has gone.
const EVICTION_TTL_MS = 60_000;
const EVICTION_RECORD_BYTES = LRU_ENTRY_BYTES + 16 + 16;

/** When each caller's entries were last forgotten, so that a read in flight across it is not kept. */
export interface Evictions {
  /** Notes that every entry kept under `key` was forgotten now. */
  record(key: string): void;
  /** Whether a read that began at `since` (ms) may be kept under `key`. */
  allows(key: string, since: number): boolean;
}

/**
 * Eviction records within `maxBytes`. A record that goes (expired or pushed out) leaves its time
 * behind: a read that began before it is refused for every key.
 */
export function createEvictions(maxBytes: number): Evictions {
  let forgotten = Number.NEGATIVE_INFINITY;
  const records = new LRUCache<string, number>({
    maxSize: Math.max(1, maxBytes),
    ttl: EVICTION_TTL_MS,
    // Checked against the clock on every look-up, rather than with a timer per record.
    ttlResolution: 0,
    sizeCalculation: (_at, key) => stringBytes(key) + EVICTION_RECORD_BYTES,
    dispose: (at, _key, reason) => {
      if (reason === 'evict' || reason === 'expire') forgotten = Math.max(forgotten, at);
    },
  });
  return {
    record(key) {
      records.set(key, Date.now());
    },
    allows(key, since) {
      const at = records.get(key);
      return since > forgotten && (at === undefined || since > at);
    },
  };
}
