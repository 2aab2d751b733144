import { LRUCache } from 'lru-cache';
import {
  createEvictions,
  type Evictions,
  heapBytes,
  LRU_ENTRY_BYTES,
  MAP_BYTES,
  MAP_ENTRY_BYTES,
  memoryBounds,
  POLICY_BYTES,
  stringBytes,
} from '../cache/heap.js';
import { aged, type CachePolicy, staleWindow, strictestOf } from '../upstream/cache-policy.js';
import type { CallContext } from '../upstream/client.js';
import { listRepositories } from '../upstream/endpoints.js';
import type { Repository, RepositoryList } from '../upstream/repository-list.js';
import { joinKey } from './join.js';

// The repository list's fetched ranges, kept per caller: docs/caching.md#ranges.

export type CallerInputs = Pick<CallContext, 'authorization' | 'caller' | 'forwarded'>;

export interface CachedRange {
  covering: RepositoryList;
  /** The lifetimes left, whole seconds; maxAge 0 once stale. */
  policy: CachePolicy;
  stale?: Stale | undefined;
}

/** RFC 5861's two rules for data past its max-age (docs/caching.md#stale-answers). */
export type StaleRule = 'stale-while-revalidate' | 'stale-if-error';

export interface Stale {
  rule: StaleRule;
  /** Seconds since its oldest data was fetched, as `Age` says it. */
  age: number;
}

/** Positions [start, end) of the list: its items, then none up to `end` (Infinity past `total`). */
interface Segment {
  start: number;
  end: number;
  items: Repository[];
  policy: CachePolicy;
  since: number;
  bytes: number;
}

/** One caller's list: segments sorted by start, never overlapping, all of one `total`. */
interface List {
  total: number;
  segments: Segment[];
  /** The same segments, oldest kept first: past its share, a caller loses these first. */
  order: Set<Segment>;
  /** The kept range that lasts longest, for a range of no items (it needs only `total`). */
  latest: { policy: CachePolicy; since: number };
  bytes: number;
  /** The caller's mark in the shared tier when this was kept: another one means a mutation since. */
  mark: string | undefined;
}

// Count every field the records hold (docs/caching.md#bounds): a segment's record, end and since,
// policy, slots in the array and the order; a list's record, array (room for sixteen), order,
// latest, and lru-cache entry.
const SEGMENT_BYTES = 72 + 32 + POLICY_BYTES + 8 + MAP_ENTRY_BYTES;
const LIST_BYTES = 64 + 48 + 16 * 8 + MAP_BYTES + 56 + LRU_ENTRY_BYTES;

function segmentBytes(items: readonly Repository[]): number {
  let bytes = SEGMENT_BYTES + 48 + 8 * items.length;
  for (const item of items) bytes += heapBytes(item);
  return bytes;
}

function piece(segment: Segment, start: number, end: number): Segment {
  const items = segment.items.slice(start - segment.start, end - segment.start);
  const { policy, since } = segment;
  return { start, end, items, policy, since, bytes: segmentBytes(items) };
}

/** The first index of `segments` (sorted) whose `of` is above `at`. */
function firstAbove(segments: readonly Segment[], at: number, of: (s: Segment) => number) {
  let low = 0;
  let high = segments.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (of(segments[middle] as Segment) > at) high = middle;
    else low = middle + 1;
  }
  return low;
}

const ends = (segment: Segment) => segment.end;
const starts = (segment: Segment) => segment.start;

function remove(list: List, index: number) {
  const [gone] = list.segments.splice(index, 1);
  if (!gone) return;
  list.order.delete(gone);
  list.bytes -= gone.bytes;
}

/** Puts `segment` in place of whatever the list held of its positions. */
function insert(list: List, segment: Segment) {
  const { segments } = list;
  let from = firstAbove(segments, segment.start, ends);
  let to = firstAbove(segments, segment.end - 1, starts);
  const replacing: Segment[] = [segment];
  const first = segments[from];
  const last = segments[to - 1];
  if (first && last && from < to) {
    const splitting = first === last && first.start < segment.start && last.end > segment.end;
    if (last.end > segment.end) {
      const right = piece(last, segment.end, last.end);
      if (splitting) replacing.push(right);
      else {
        list.bytes += right.bytes - last.bytes;
        Object.assign(last, right);
        to -= 1;
      }
    }
    // Trimmed in place, so that they keep their place in `order`.
    if (first.start < segment.start) {
      const left = piece(first, first.start, segment.start);
      list.bytes += left.bytes - first.bytes;
      Object.assign(first, left);
      from += 1;
    }
  }
  for (const gone of segments.splice(from, to - from, ...replacing)) {
    list.order.delete(gone);
    list.bytes -= gone.bytes;
  }
  for (const added of replacing) {
    list.order.add(added);
    list.bytes += added.bytes;
  }
}

/** The segment a kept range makes: none for a range of no items short of `total`. */
function segmentOf(covering: RepositoryList, start: number, policy: CachePolicy, since: number) {
  const { total, repositories } = covering;
  // A range that reached `total` holds every position after it.
  const reached = start + repositories.length >= total;
  // A copy exactly as long as its items, whatever the calls grew the array to.
  const items = start >= total ? [] : repositories.slice();
  if (!reached && items.length === 0) return undefined;
  const end = reached ? Number.POSITIVE_INFINITY : start + items.length;
  return { start: Math.min(start, total), end, items, policy, since, bytes: segmentBytes(items) };
}

/**
 * What a range kept at `since` is worth `now`: fresh with a whole second left, stale under
 * `rule`'s window, 'no', or 'gone' once past every window it has.
 */
function worth(
  { policy, since }: { policy: CachePolicy; since: number },
  now: number,
  rule: StaleRule | undefined,
): CachePolicy | Stale | 'gone' | 'no' {
  const left = aged(policy, now - since);
  if (left.maxAge >= 1) return left;
  const past = (now - since) / 1000 - policy.maxAge;
  if (past > staleWindow(policy)) return 'gone';
  const window =
    rule === 'stale-while-revalidate' ? policy.staleWhileRevalidate : policy.staleIfError;
  if (!rule || past > (window ?? 0)) return 'no';
  return { rule, age: Math.floor((now - since) / 1000) };
}

/** The strictest of the parts read; stale data gives whoever reads it no further lifetime. */
function cachedRange(covering: RepositoryList, parts: ReadonlyArray<CachePolicy | Stale>) {
  let policy = strictestOf(parts.map((part) => ('rule' in part ? undefined : part)));
  let stale: Stale | undefined;
  for (const part of parts) {
    if ('rule' in part) stale = { rule: part.rule, age: Math.max(stale?.age ?? 0, part.age) };
  }
  if (stale) policy = { maxAge: 0, scope: policy?.scope ?? 'PRIVATE' };
  return { covering, policy: policy as CachePolicy, stale };
}

/** What a caller's ranges are kept under: the key of the list's calls but offset and limit. */
export const listKey = (call: CallerInputs) =>
  joinKey(listRepositories, { limit: undefined, offset: undefined }, call);

const expiry = ({ policy, since }: List['latest']) =>
  since + (policy.maxAge + staleWindow(policy)) * 1000;

/**
 * Ranges in this process's memory, one lru-cache entry per caller's list, bounded by the heap they
 * hold; one caller keeps at most its share. A look-up is a binary search, never a walk of what a
 * caller kept (docs/caching.md#ranges).
 */
export class RangeCache {
  readonly #share: number;
  readonly #evictions: Evictions;
  readonly #lists: LRUCache<string, List>;

  readonly #forgetElsewhere: ((keys: CallerKeys) => Promise<void>) | undefined;

  constructor(maxBytes: number, options: RangeCacheOptions = {}) {
    this.#forgetElsewhere = options.forgetElsewhere;
    const { records, entries, share } = memoryBounds(maxBytes);
    this.#share = share;
    this.#evictions = createEvictions(records);
    this.#lists = new LRUCache<string, List>({
      maxSize: Math.max(1, entries),
      sizeCalculation: (list) => list.bytes,
    });
  }

  /** The bytes kept. */
  get bytes(): number {
    return this.#lists.calculatedSize;
  }

  /**
   * The items of [start, end) when fresh ranges of this caller's cover it wholly, or with `rule`,
   * ranges within that rule's window; else undefined (the range is fetched whole).
   */
  lookup(
    call: CallerInputs,
    start: number,
    end: number,
    rule?: StaleRule | undefined,
  ): CachedRange | undefined {
    const key = listKey(call);
    const list = this.#lists.get(key);
    if (!list) return undefined;
    const now = Date.now();
    if (start >= end) {
      const latest = worth(list.latest, now, rule);
      if (typeof latest === 'string') return undefined;
      return cachedRange({ repositories: [], total: list.total, offset: start }, [latest]);
    }
    const parts: Array<CachePolicy | Stale> = [];
    const items: Repository[] = [];
    let at = start;
    for (let index = firstAbove(list.segments, start, starts) - 1; at < end; index++) {
      const segment = list.segments[index];
      if (!segment || segment.start > at || segment.end <= at) return undefined;
      const part = worth(segment, now, rule);
      if (part === 'gone') {
        remove(list, index);
        this.#resize(key, list);
      }
      if (typeof part === 'string') return undefined;
      parts.push(part);
      const stop = Math.min(end, segment.end);
      for (const item of segment.items.slice(at - segment.start, stop - segment.start))
        items.push(item);
      at = stop;
    }
    return cachedRange({ repositories: items, total: list.total, offset: start }, parts);
  }

  /**
   * Keeps a range's items for `policy`'s lifetimes counted from `since` (ms, before its first call
   * went out), unless the caller's ranges were forgotten at or after `since`.
   */
  keep(
    call: CallerInputs,
    covering: RepositoryList,
    start: number,
    policy: CachePolicy | undefined,
    since: number,
    mark?: string | undefined,
  ): void {
    if (!policy || policy.maxAge + staleWindow(policy) <= 0 || this.#share <= 0) return;
    const key = listKey(call);
    if (!this.#evictions.allows(key, since)) return;
    const segment = segmentOf(covering, start, policy, since);
    const empty = LIST_BYTES + stringBytes(key) + (mark ? stringBytes(mark) : 0);
    if (segment && empty + segment.bytes > this.#share) return;
    const { total } = covering;
    const kept = this.#lists.get(key);
    // A range of another `total` replaces every other: the list changed.
    const list: List =
      kept?.total === total && (mark === undefined || kept.mark === mark)
        ? kept
        : { total, segments: [], order: new Set(), latest: { policy, since }, bytes: empty, mark };
    if (expiry({ policy, since }) > expiry(list.latest)) list.latest = { policy, since };
    if (segment) insert(list, segment);
    for (const oldest of list.order) {
      if (list.bytes <= this.#share) break;
      remove(list, firstAbove(list.segments, oldest.start, starts) - 1);
    }
    this.#resize(key, list);
  }

  /**
   * Forgets the caller's ranges when they were kept under another mark than the shared tier's
   * now: the caller's mutation, in another process, since they were kept.
   */
  markSeen(call: CallerInputs, mark: string): void {
    const key = listKey(call);
    const list = this.#lists.get(key);
    if (list && list.mark !== mark) this.#lists.delete(key);
  }

  /**
   * Forgets every range kept for this caller (after its mutation), here and in the processes
   * `forgetElsewhere` reaches, which forget the caller's kept answers (`answers`, its response
   * cache session) in the same message; resolves once they have.
   */
  evictCaller(call: CallerInputs, answers?: string): Promise<void> {
    const key = listKey(call);
    this.forgetKey(key);
    return this.#forgetElsewhere?.({ ranges: key, answers }) ?? Promise.resolve();
  }

  /** Forgets every range kept under `key`, as another process asked. */
  forgetKey(key: string): void {
    this.#evictions.record(key);
    this.#lists.delete(key);
  }

  // lru-cache sizes a value only when it is set: a list that changed is set again as a new record.
  #resize(key: string, list: List) {
    this.#lists.set(key, { ...list });
  }
}

/** What the other processes of the pod forget of a caller: its ranges, and its kept answers. */
export interface CallerKeys {
  ranges: string;
  /** The caller's response cache session, when its answers are to be forgotten too. */
  answers?: string | undefined;
}

export interface RangeCacheOptions {
  /** Tells the other processes of the pod (WORKERS) to forget a caller's ranges and answers. */
  forgetElsewhere?: ((keys: CallerKeys) => Promise<void>) | undefined;
}

export const createRangeCache = (maxBytes: number, options?: RangeCacheOptions) =>
  new RangeCache(maxBytes, options);
