import { LRUCache } from 'lru-cache';
import type { CallContext } from '../upstream/client.js';
import { listRepositories } from '../upstream/endpoints.js';
import type { Repository, RepositoryList } from '../upstream/repository-list.js';
import {
  createEvictions,
  heapBytes,
  LRU_ENTRY_BYTES,
  MAP_BYTES,
  MAP_ENTRY_BYTES,
  memoryBounds,
  POLICY_BYTES,
  stringBytes,
} from './heap.js';
import { joinKey } from './join.js';
import { aged, type CachePolicy, staleWindow, strictest } from './policy.js';

// The repository list's fetched ranges, kept per caller for their answers' max-age, so that a
// cached `offset 0, limit 40` answers `offset 10, limit 20` of a later request with no call.

/** What shapes one caller's list: joinKey of the route with no offset and no limit. */
type CallerInputs = Pick<CallContext, 'authorization' | 'caller' | 'forwarded'>;

/** A range served from the cache: its items from `start`, the list's total, what is left of it. */
export interface CachedRange {
  covering: RepositoryList;
  /**
   * The lifetimes left (whole seconds, at least 1) and the scope of the answers it came from; a
   * stale range has none left (maxAge 0).
   */
  policy: CachePolicy;
  /** Set when part of it is past its max-age: the rule that let it answer and its age (s). */
  stale?: Stale | undefined;
}

/** RFC 5861's two rules for data past its max-age. */
export type StaleRule = 'stale-while-revalidate' | 'stale-if-error';

export interface Stale {
  rule: StaleRule;
  /** Seconds since the oldest of its data was fetched, as `Age` says it. */
  age: number;
}

export interface RangeCache {
  /**
   * The items of [start, end) from fresh ranges of this caller's that cover it wholly; undefined
   * when any part is missing (then the range is fetched whole). With a `stale` rule, ranges past
   * their max-age but within that rule's window answer too.
   */
  lookup(
    call: CallerInputs,
    start: number,
    end: number,
    stale?: StaleRule | undefined,
  ): CachedRange | undefined;
  /**
   * Keeps what a range's calls brought, for `policy`'s max-age counted from `since` (ms, taken
   * before the first call went out, so the range never outlives its answer), unless the caller's
   * ranges were forgotten at or after `since`. No policy, or one of no lifetime, keeps nothing.
   */
  keep(
    call: CallerInputs,
    list: RepositoryList,
    start: number,
    policy: CachePolicy | undefined,
    since: number,
  ): void;
  /** Forgets every range kept for this caller (after its mutation). */
  evictCaller(call: CallerInputs): void;
  /** The bytes kept, for tests. */
  readonly bytes: number;
}

/** Positions [start, end) of the list; its items, then none up to `end` (past `total`). */
interface Segment {
  start: number;
  /** Infinity once it reached `total`: nothing is past it. */
  end: number;
  items: Repository[];
  policy: CachePolicy;
  since: number;
  bytes: number;
}

/** One caller's list: segments sorted by start that never overlap, and all of one `total`. */
interface List {
  total: number;
  segments: Segment[];
  /** The same segments, oldest kept first: past its share, a caller loses these first. */
  order: Set<Segment>;
  /** The kept range that lasts longest, for a range of no items (it needs only `total`). */
  latest: { policy: CachePolicy; since: number };
  bytes: number;
}

// A segment's record, its two heap numbers (end, since), its policy, its slots in the list's array
// and order; a list's record, its array (which splice gives room for sixteen), its order, its
// latest record, its key's entry in the cache.
const SEGMENT_BYTES = 72 + 32 + POLICY_BYTES + 8 + MAP_ENTRY_BYTES;
const LIST_BYTES = 64 + 48 + 16 * 8 + MAP_BYTES + 56 + LRU_ENTRY_BYTES;

/** A segment's record and items (its array sliced to its length). */
function segmentBytes(items: readonly Repository[]): number {
  let bytes = SEGMENT_BYTES + 48 + 8 * items.length;
  for (const item of items) bytes += heapBytes(item);
  return bytes;
}

/** The part [start, end) of a segment. */
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

/**
 * In this process's memory, one entry of lru-cache per caller's list, bounded by what the ranges
 * hold in the heap (RESPONSE_CACHE_BYTES, apart from the response cache's own): the lists least
 * recently used go first, and one caller keeps no more than its share (its oldest ranges first).
 * A newly kept range replaces what older ones held of its positions; one whose `total` differs
 * replaces all of them (the list changed); a range that reached `total` covers everything past
 * it, so any number of ranges past the end are one. A look-up is a binary search, then the
 * ranges it answers from.
 */
export function createRangeCache(maxBytes: number): RangeCache {
  const { records, entries, share } = memoryBounds(maxBytes);
  const evictions = createEvictions(records);
  const lists = new LRUCache<string, List>({
    maxSize: Math.max(1, entries),
    sizeCalculation: (list) => list.bytes,
  });
  const listKey = (call: CallerInputs) =>
    joinKey(listRepositories, { limit: undefined, offset: undefined }, call);
  // lru-cache sizes a value when it is set, and again only when another value replaces it: a
  // list that changed is set again as a new record of the same segments.
  const resize = (key: string, list: List) => {
    const { total, segments, order, latest, bytes } = list;
    lists.set(key, { total, segments, order, latest, bytes });
  };
  const remove = (list: List, index: number) => {
    const [gone] = list.segments.splice(index, 1);
    if (!gone) return;
    list.order.delete(gone);
    list.bytes -= gone.bytes;
  };

  /** Puts `segment` in place of whatever the list held of its positions. */
  const insert = (list: List, segment: Segment) => {
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
      // Trimmed where they are, so that they keep their place in the order of keeping.
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
  };

  return {
    get bytes() {
      return lists.calculatedSize;
    },
    lookup(call, start, end, rule) {
      const key = listKey(call);
      const list = lists.get(key);
      if (!list) return undefined;
      const now = Date.now();
      // What a range kept at `since` under `policy` is worth now: fresh, stale under the rule, or
      // gone (past every window it has, so it is dropped).
      const judge = (policy: CachePolicy, since: number): CachePolicy | Stale | 'gone' | 'no' => {
        const left = aged(policy, now - since);
        // Served with at least a whole second left, or not at all.
        if (left.maxAge >= 1) return left;
        const past = (now - since) / 1000 - policy.maxAge;
        if (past > staleWindow(policy)) return 'gone';
        const window =
          rule === 'stale-while-revalidate' ? policy.staleWhileRevalidate : policy.staleIfError;
        if (!rule || past > (window ?? 0)) return 'no';
        return { rule, age: Math.floor((now - since) / 1000) };
      };
      let policy: CachePolicy | undefined;
      let stale: Stale | undefined;
      const take = (worth: CachePolicy | Stale) => {
        if ('rule' in worth)
          stale = { rule: worth.rule, age: Math.max(stale?.age ?? 0, worth.age) };
        else policy = policy ? strictest(policy, worth) : worth;
      };
      const answer = (covering: RepositoryList): CachedRange => ({
        covering,
        // Stale data gives whoever reads it no further lifetime.
        policy: stale ? { maxAge: 0, scope: policy?.scope ?? 'PRIVATE' } : (policy as CachePolicy),
        stale,
      });
      // A range of no items (a page that asks only `total`) takes the freshest range's.
      if (start >= end) {
        const worth = judge(list.latest.policy, list.latest.since);
        if (worth === 'gone' || worth === 'no') return undefined;
        take(worth);
        return answer({ repositories: [], total: list.total, offset: start });
      }
      const items: Repository[] = [];
      let at = start;
      for (let index = firstAbove(list.segments, start, starts) - 1; at < end; index++) {
        const segment = list.segments[index];
        if (!segment || segment.start > at || segment.end <= at) return undefined;
        const worth = judge(segment.policy, segment.since);
        if (worth === 'gone') {
          remove(list, index);
          resize(key, list);
          return undefined;
        }
        if (worth === 'no') return undefined;
        take(worth);
        const stop = Math.min(end, segment.end);
        for (const item of segment.items.slice(at - segment.start, stop - segment.start))
          items.push(item);
        at = stop;
      }
      return answer({ repositories: items, total: list.total, offset: start });
    },
    keep(call, covering, start, policy, since) {
      if (!policy || policy.maxAge + staleWindow(policy) <= 0 || maxBytes <= 0) return;
      const key = listKey(call);
      if (!evictions.allows(key, since)) return;
      const { total, repositories } = covering;
      // Past `total` there is nothing: a range that reached it holds every position after it.
      const reached = start + repositories.length >= total;
      // A copy: exactly as long as its items, whatever the calls grew it to.
      const items = start >= total ? [] : repositories.slice();
      // A range of no items short of `total` holds no positions: it tells only `total`.
      const segment: Segment | undefined =
        reached || items.length > 0
          ? {
              start: Math.min(start, total),
              end: reached ? Number.POSITIVE_INFINITY : start + items.length,
              items,
              policy,
              since,
              bytes: segmentBytes(items),
            }
          : undefined;
      const empty = LIST_BYTES + stringBytes(key);
      if (segment && empty + segment.bytes > share) return;
      const kept = lists.get(key);
      const list: List =
        kept?.total === total
          ? kept
          : { total, segments: [], order: new Set(), latest: { policy, since }, bytes: empty };
      const expires = (latest: List['latest']) =>
        latest.since + (latest.policy.maxAge + staleWindow(latest.policy)) * 1000;
      if (expires({ policy, since }) > expires(list.latest)) list.latest = { policy, since };
      if (segment) insert(list, segment);
      for (const oldest of list.order) {
        if (list.bytes <= share) break;
        remove(list, firstAbove(list.segments, oldest.start, starts) - 1);
      }
      resize(key, list);
    },
    evictCaller(call) {
      const key = listKey(call);
      evictions.record(key);
      lists.delete(key);
    },
  };
}
