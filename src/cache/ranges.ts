import type { CallContext } from '../upstream/client.js';
import { listRepositories } from '../upstream/endpoints.js';
import type { Repository, RepositoryList } from '../upstream/repository-list.js';
import { joinKey } from './join.js';
import type { CachePolicy } from './policy.js';

// The repository list's fetched ranges, kept per caller for their answers' max-age, so that a
// cached `offset 0, limit 40` answers `offset 10, limit 20` of a later request with no call.

/** What shapes one caller's list: joinKey of the route with no offset and no limit. */
type CallerInputs = Pick<CallContext, 'authorization' | 'caller' | 'forwarded'>;

/** A range served from the cache: its items from `start`, the list's total, what is left of it. */
export interface CachedRange {
  covering: RepositoryList;
  /** The lifetime left (whole seconds, at least 1) and the scope of the answers it came from. */
  policy: CachePolicy;
}

export interface RangeCache {
  /**
   * The items of [start, end) from fresh ranges of this caller's that cover it wholly and agree
   * on `total`; undefined when any part is missing (then the range is fetched whole).
   */
  lookup(call: CallerInputs, start: number, end: number): CachedRange | undefined;
  /**
   * Keeps what a range's calls brought, for `policy`'s max-age counted from `since` (ms, taken
   * before the first call went out, so the range never outlives its answer). No policy, or one
   * of no lifetime, keeps nothing.
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

interface Entry {
  list: string;
  caller: string;
  start: number;
  items: Repository[];
  total: number;
  scope: CachePolicy['scope'];
  expiresAt: number;
  bytes: number;
}

/** How far an entry answers: its items' end, or past it for good when it reached `total`. */
const reach = (entry: Entry) =>
  entry.start + entry.items.length >= entry.total
    ? Number.POSITIVE_INFINITY
    : entry.start + entry.items.length;

/**
 * In this process's memory, least recently used out first, bounded by the JSON length of the
 * items kept (`maxBytes`). Written here rather than on the response cache's store, which keeps
 * whole answers under one key each and cannot list a caller's ranges, and rather than on
 * lru-cache, which is no dependency of the facade's (only of its tools').
 */
export function createRangeCache(maxBytes: number): RangeCache {
  // Insertion order is recency: a hit moves its entries to the end.
  const entries = new Set<Entry>();
  const byList = new Map<string, Set<Entry>>();
  const byCaller = new Map<string, Set<string>>();
  let size = 0;

  const drop = (entry: Entry) => {
    if (!entries.delete(entry)) return;
    size -= entry.bytes;
    const list = byList.get(entry.list);
    list?.delete(entry);
    if (list?.size === 0) {
      byList.delete(entry.list);
      const lists = byCaller.get(entry.caller);
      lists?.delete(entry.list);
      if (lists?.size === 0) byCaller.delete(entry.caller);
    }
  };

  const callerKey = (call: CallerInputs) => {
    const forwarded = Object.entries(call.forwarded ?? {}).sort(([a], [b]) => (a < b ? -1 : 1));
    return JSON.stringify([call.authorization ?? null, call.caller ?? null, forwarded]);
  };
  const listKey = (call: CallerInputs) =>
    joinKey(listRepositories, { limit: undefined, offset: undefined }, call);

  return {
    get bytes() {
      return size;
    },
    lookup(call, start, end) {
      const kept = byList.get(listKey(call));
      if (!kept) return undefined;
      const now = Date.now();
      const fresh: Entry[] = [];
      for (const entry of kept) {
        // Served with at least a whole second left, or not at all.
        if (entry.expiresAt - now < 1000) drop(entry);
        else fresh.push(entry);
      }
      const used: Entry[] = [];
      const items: Repository[] = [];
      let total: number | undefined;
      let at = start;
      // A range of no items (a page that asks only `total`) takes any fresh entry's.
      if (start >= end) {
        const any = fresh.at(-1);
        if (!any) return undefined;
        used.push(any);
        total = any.total;
      }
      while (at < end) {
        let best: Entry | undefined;
        for (const entry of fresh) {
          if (entry.start > at || reach(entry) <= at) continue;
          if (total !== undefined && entry.total !== total) continue;
          if (!best || reach(entry) > reach(best)) best = entry;
        }
        if (!best) return undefined;
        total ??= best.total;
        used.push(best);
        const stop = Math.min(end, best.start + best.items.length);
        if (stop > at) items.push(...best.items.slice(at - best.start, stop - best.start));
        at = Math.min(end, reach(best));
      }
      let expiresAt = Number.POSITIVE_INFINITY;
      let scope: CachePolicy['scope'] = 'PUBLIC';
      for (const entry of used) {
        expiresAt = Math.min(expiresAt, entry.expiresAt);
        if (entry.scope === 'PRIVATE') scope = 'PRIVATE';
        entries.delete(entry);
        entries.add(entry);
      }
      return {
        covering: { repositories: items, total: total ?? 0, offset: start },
        policy: { maxAge: Math.floor((expiresAt - now) / 1000), scope },
      };
    },
    keep(call, list, start, policy, since) {
      if (!policy || policy.maxAge <= 0 || maxBytes <= 0) return;
      const key = listKey(call);
      const caller = callerKey(call);
      const bytes = key.length + JSON.stringify(list.repositories).length;
      if (bytes > maxBytes) return;
      const entry: Entry = {
        list: key,
        caller,
        start,
        items: list.repositories,
        total: list.total,
        scope: policy.scope,
        expiresAt: since + policy.maxAge * 1000,
        bytes,
      };
      entries.add(entry);
      size += bytes;
      let kept = byList.get(key);
      if (!kept) {
        kept = new Set();
        byList.set(key, kept);
        let lists = byCaller.get(caller);
        if (!lists) {
          lists = new Set();
          byCaller.set(caller, lists);
        }
        lists.add(key);
      }
      kept.add(entry);
      for (const oldest of entries) {
        if (size <= maxBytes) break;
        drop(oldest);
      }
    },
    evictCaller(call) {
      for (const list of byCaller.get(callerKey(call)) ?? []) {
        for (const entry of byList.get(list) ?? []) drop(entry);
      }
    },
  };
}
