import DataLoader from 'dataloader';
import { UpstreamBudgetError, UpstreamError } from '../errors.js';
import type { CacheLookup } from '../telemetry/metrics.js';
import { isUpstreamFault } from '../upstream/breaker.js';
import type { CallBudget } from '../upstream/budget.js';
import { type CachePolicy, readsPolicy } from '../upstream/cache-policy.js';
import type { CallContext, CompletedCall } from '../upstream/client.js';
import { listRepositories, type PageQuery } from '../upstream/endpoints.js';
import type { Repository, RepositoryList } from '../upstream/repository-list.js';
import { type InFlight, joinKey } from './join.js';
import type { CachedRange, RangeCache } from './ranges.js';
import type { SharedRanges } from './ranges-redis.js';
import type { Refreshes } from './refresh.js';

export interface Loaders {
  /**
   * Counts the field among the callers of the call that serves the page; `path` is called only
   * when the request shows its upstream calls.
   */
  page(key: PageQuery, path: () => string): Promise<RepositoryList>;
}

export interface LoaderOptions {
  /** MAX_COALESCED_RANGE. */
  maxCoalescedRange: number;
  /** Shared by the requests of one app. */
  pageCap: PageCap;
  /** None: every range is fetched. */
  ranges?: RangeCache | undefined;
  onCachedRange?: ((hit: CachedRange, fields: readonly string[] | undefined) => void) | undefined;
  /** None: a stale range is never refreshed. */
  refreshes?: Refreshes | undefined;
  /** The kept ranges' tier in Redis, behind `ranges`; none: each process keeps its own. */
  shared?: SharedRanges | undefined;
  /** How long one process may refresh a range before another may (the shared tier's lease). */
  refreshLeaseMs?: number | undefined;
  onLookup?: ((route: string, result: CacheLookup) => void) | undefined;
}

const ROUTE = `${listRepositories.method} ${listRepositories.path}`;

/** The client, through the calls in flight that the loaders may join. */
type PageSource = Pick<InFlight, 'send'>;

/** The upstream's largest page, as its short answers show it (docs/upstream.md#page-size). */
export interface PageCap {
  /** Trusted once two short answers agreed; undefined: plan one call a page. */
  value: number | undefined;
  /** The size one short answer showed, until another agrees. */
  seen: number | undefined;
}

export function createPageCap(): PageCap {
  return { value: undefined, seen: undefined };
}

const pageKey = (key: PageQuery) => `${key.limit ?? ''}:${key.offset ?? ''}`;

/**
 * Per request: they hold its credentials and answers. Only calls in flight (src/read/join.ts)
 * and kept ranges (src/read/ranges.ts) are shared, and only between alike upstream inputs.
 */
export function createLoaders(
  client: PageSource,
  call: CallContext,
  options: LoaderOptions,
): Loaders {
  const callers = new Map<string, string[]>();
  const repositoryPage = new DataLoader<PageQuery, RepositoryList, string>(
    (keys) => new PageBatch(client, call, options, keys, callers).load(),
    { cacheKeyFn: pageKey },
  );
  return {
    page(key, path) {
      const cacheKey = pageKey(key);
      const fields = callers.get(cacheKey);
      const field = call.showCalls ? path() : '';
      if (fields) fields.push(field);
      else callers.set(cacheKey, [field]);
      return repositoryPage.load(key);
    },
  };
}

interface Range {
  start: number;
  end: number;
  keys: number[];
  /** Whether any page of the range named an offset: an omitted one is not sent. */
  sendOffset: boolean;
}

/** A call-making unit of a batch: its keys and the calls it is expected to need. */
interface Unit {
  keys: number[];
  calls: number;
  /** What it throws fails all its keys. */
  load: (unitCall: CallContext) => Promise<void>;
}

/** One batch of pages: merged into covering ranges, answered from kept ranges or calls. */
class PageBatch {
  readonly #results: Array<RepositoryList | Error>;
  /** The caller's mark in the shared tier when the batch began: its keeps are refused past another. */
  #mark: string | undefined;
  /** A call that brought `total`, for the pages of no items: any call of the batch will do. */
  #brought: { list: RepositoryList; sentOffset: boolean } | undefined;

  constructor(
    readonly client: PageSource,
    readonly call: CallContext,
    readonly options: LoaderOptions,
    readonly keys: readonly PageQuery[],
    /** Per page key, the fields that asked for it (their paths, or '' when not shown). */
    readonly callers: ReadonlyMap<string, string[]>,
  ) {
    this.#results = new Array(keys.length);
  }

  async load(): Promise<Array<RepositoryList | Error>> {
    const { call, options } = this;
    const { direct, ranges, totalsOnly } = planRanges(this.keys, options.maxCoalescedRange);
    const kept = options.ranges;
    if (kept && options.shared && ranges.length > 0)
      await this.#readShared(kept, options.shared, ranges);
    const stale: Range[] = [];
    // A range kept ranges cover answers with no call (docs/caching.md#ranges, #stale-answers).
    const fetched = kept
      ? ranges.filter((range) => {
          const hit = kept.lookup(call, range.start, range.end, 'stale-while-revalidate');
          options.onLookup?.(ROUTE, hit?.stale?.rule ?? (hit ? 'hit' : 'miss'));
          if (!hit) return true;
          this.#answerKept(range, hit);
          if (hit.stale) stale.push(range);
          return false;
        })
      : ranges;
    const units: Unit[] = [
      ...direct.map((index) => ({
        keys: [index],
        calls: 1,
        load: (unitCall: CallContext) => this.#loadPage(index, unitCall),
      })),
      ...fetched.map((range) => ({
        keys: range.keys,
        calls: plannedCalls(range, options.pageCap.value),
        load: (unitCall: CallContext) => this.#loadRange(range, unitCall),
      })),
    ].sort((a, b) => Math.min(...a.keys) - Math.min(...b.keys));
    // The request's own pages reserve first: a refresh takes only what they leave of the budget.
    await this.#runUnits(units, () => {
      for (const range of stale) this.#refresh(range);
    });
    this.#answerTotalsOnly(totalsOnly);
    return this.#results;
  }

  /**
   * Brings into memory what the shared tier holds of the ranges memory lacks or holds stale, and
   * forgets what memory kept of the caller before a mutation elsewhere. A Redis past its deadline
   * leaves memory alone.
   */
  async #readShared(kept: RangeCache, shared: SharedRanges, ranges: readonly Range[]) {
    const { call } = this;
    const wanted = ranges.filter((range) => {
      if (range.start >= range.end) return false;
      const hit = kept.lookup(call, range.start, range.end, 'stale-while-revalidate');
      return !hit || hit.stale !== undefined;
    });
    const read = await shared.read(call, wanted).catch(() => undefined);
    if (!read) return;
    this.#mark = read.mark;
    kept.markSeen(call, read.mark);
    // Oldest first: where two overlap, the later one wins, as in memory.
    for (const range of read.ranges.sort((a, b) => a.since - b.since))
      kept.keep(call, range.covering, range.start, range.policy, range.since, read.mark);
  }

  /** Keeps a fetched range in memory, and for every process in the shared tier. */
  #keep(covering: RepositoryList, start: number, policy: CachePolicy, since: number) {
    const { call, options } = this;
    const mark = this.#mark;
    options.ranges?.keep(call, covering, start, policy, since, mark);
    // Without a mark read, a mutation elsewhere could not be told from none.
    if (mark === undefined) return undefined;
    return options.shared?.keep({ call, covering, start, policy, since, mark }).catch(() => false);
  }

  readonly #keeper: Keep = (covering, start, policy, since) =>
    this.#keep(covering, start, policy, since);

  /** Forgets the caller's ranges in memory and in the shared tier. */
  #forget(): void {
    const { call, options } = this;
    void options.ranges?.evictCaller(call);
    void options.shared?.evictCaller(call).catch(() => {});
  }

  #fieldsOf(indexes: readonly number[]): string[] {
    return indexes.flatMap((index) => this.callers.get(pageKey(this.#key(index))) ?? ['']);
  }

  #key(index: number): PageQuery {
    return this.keys[index] as PageQuery;
  }

  #bring(list: RepositoryList, sentOffset: boolean): void {
    this.#brought ??= { list, sentOffset };
  }

  #ends(range: Range): number[] {
    return range.keys.map((index) => pageEnd(this.#key(index))).sort((a, b) => a - b);
  }

  async #loadPage(index: number, unitCall: CallContext): Promise<void> {
    const key = this.#key(index);
    const { value: page } = await this.client.send(listRepositories, key, unitCall);
    this.#bring(page, key.offset !== undefined);
    this.#results[index] = page;
  }

  async #loadRange(range: Range, unitCall: CallContext): Promise<void> {
    const { client, options } = this;
    const kept = options.ranges;
    const read = await readRange(
      client,
      unitCall,
      range,
      this.#ends(range),
      options.pageCap,
      kept ? this.#keeper : undefined,
    ).catch((failure: unknown) => ({ covering: undefined, failure: failure as Error }));
    if (read.failure && kept && endsTheRight(read.failure)) this.#forget();
    // Never after a 4xx: only an upstream fault answers from a kept range (stale-if-error).
    if (read.failure && kept && isUpstreamFault(read.failure)) {
      const hit = kept.lookup(this.call, range.start, range.end, 'stale-if-error');
      if (hit?.stale) options.onLookup?.(ROUTE, 'stale-if-error');
      if (hit) return this.#answerKept(range, hit);
    }
    if (!read.covering) throw read.failure;
    this.#bring(read.covering, range.sendOffset);
    this.#answerRange(range, read.covering, read.failure);
  }

  #answerKept(range: Range, hit: CachedRange): void {
    this.#bring(hit.covering, range.sendOffset);
    this.#answerRange(range, hit.covering);
    const { call, options } = this;
    options.onCachedRange?.(hit, call.showCalls ? this.#fieldsOf(range.keys) : undefined);
  }

  /** A range's pages, sliced from what covers it (fetched or kept). */
  #answerRange(range: Range, covering: RepositoryList, failure?: Error): void {
    const covered = range.start + covering.repositories.length;
    for (const index of range.keys) {
      const key = this.#key(index);
      // Cut short: the pages it finished answer; those it did not get its failure.
      if (failure && key.limit !== 0 && Math.min(pageEnd(key), covering.total) > covered) {
        this.#results[index] = failure;
        continue;
      }
      const from = (key.offset ?? 0) - range.start;
      this.#results[index] = {
        ...covering,
        repositories: from < 0 ? [] : covering.repositories.slice(from, from + (key.limit ?? 0)),
        // An omitted offset is the upstream's default (0); echo what it said when asked alone.
        offset: key.offset ?? (range.start === 0 ? covering.offset : 0),
      };
    }
  }

  /**
   * Reserves every unit's planned calls before any call; a unit whose plan does not fit still
   * gets its first call from what is left (docs/operations.md#limits).
   */
  async #runUnits(units: readonly Unit[], reserved: () => void): Promise<void> {
    const { call } = this;
    const budget = call.budget;
    const planned = units.map((unit) => budget?.reserve(unit.calls));
    const reservations = planned.map((reservation) => reservation ?? budget?.reserve(1));
    reserved();
    await Promise.all(
      units.map(async (unit, index) => {
        const reservation = reservations[index];
        if (budget && !reservation) {
          for (const key of unit.keys) this.#results[key] = new UpstreamBudgetError(budget.limit);
          return;
        }
        const fields = this.#fieldsOf(unit.keys);
        const unitCall: CallContext = {
          ...call,
          callers: fields.length,
          fields: call.showCalls ? fields : undefined,
        };
        if (reservation) unitCall.budget = reservation;
        try {
          await unit.load(unitCall);
        } catch (error) {
          for (const key of unit.keys) this.#results[key] = error as Error;
        } finally {
          reservation?.release();
        }
      }),
    );
  }

  /** A page of no items whose range failed answers from any call that brought `total`. */
  #answerTotalsOnly(totalsOnly: readonly number[]): void {
    const brought = this.#brought;
    for (const index of totalsOnly) {
      if (!brought || !(this.#results[index] instanceof Error)) continue;
      this.#results[index] = {
        ...brought.list,
        repositories: [],
        offset: this.#key(index).offset ?? (brought.sentOffset ? 0 : brought.list.offset),
      };
    }
  }

  /**
   * The caller's credential and forwarded headers, and units of its request's budget: a refresh
   * starts only when the range's planned calls fit in what the request left, and never calls past
   * them but from that same budget. Neither the request's signal nor its log: it outlives both.
   */
  #refresh(range: Range): void {
    const { client, call, options } = this;
    const refreshes = options.refreshes;
    if (!refreshes) return;
    const { authorization, caller, forwarded, requestId } = call;
    const reservation = call.budget?.reserve(plannedCalls(range, options.pageCap.value));
    if (call.budget && !reservation) return;
    const ends = this.#ends(range);
    const page = { limit: range.end - range.start, offset: range.start };
    const { shared, refreshLeaseMs } = options;
    const started = refreshes.start(
      joinKey(listRepositories, page, call),
      ROUTE,
      async (signal) => {
        const own: CallContext = { authorization, caller, forwarded, requestId, signal };
        if (reservation) own.budget = reservation;
        try {
          // One process refreshes for the fleet; the others answer stale meanwhile. A Redis away
          // leaves each process to refresh its own.
          const lease = shared?.lease(call, range.start, range.end, refreshLeaseMs ?? 10_000);
          const release = lease && (await lease.catch(() => () => Promise.resolve()));
          if (lease && !release) return 'skipped';
          try {
            const read = await readRange(client, own, range, ends, options.pageCap, this.#keeper);
            if (read.failure) throw read.failure;
            // The lease ends once the fleet can read what it kept: ended before, another process
            // would find the range still stale and refresh it again.
            await read.written;
          } finally {
            // Once its range is kept (or failed): the next stale read may refresh again.
            await release?.();
          }
          return 'refreshed';
        } catch (error) {
          if (endsTheRight(error)) this.#forget();
          throw error;
        } finally {
          reservation?.release();
        }
      },
    );
    if (!started) reservation?.release();
  }
}

/**
 * Pages at the upstream's default size go as they are (that size is unknown); the others merge,
 * by offset, into covering ranges; a page of no items joins any range, for `total`.
 */
function planRanges(keys: readonly PageQuery[], maxCoalescedRange: number) {
  const ranges: Range[] = [];
  const direct = keys.flatMap((key, index) => (key.limit === undefined ? [index] : []));
  const order = keys
    .map((key, index) => ({ key, index }))
    .filter(({ key }) => key.limit !== undefined)
    .sort((a, b) => (a.key.offset ?? 0) - (b.key.offset ?? 0));

  const totalsOnly: number[] = [];
  for (const { key, index } of order) {
    if (key.limit === 0) {
      totalsOnly.push(index);
      continue;
    }
    const start = key.offset ?? 0;
    const end = start + (key.limit ?? 0);
    const last = ranges.at(-1);
    if (last && start <= last.end && Math.max(end, last.end) - last.start <= maxCoalescedRange) {
      last.end = Math.max(last.end, end);
      last.keys.push(index);
      last.sendOffset ||= key.offset !== undefined;
    } else {
      ranges.push({ start, end, keys: [index], sendOffset: key.offset !== undefined });
    }
  }
  for (const index of totalsOnly) {
    const host = ranges[0];
    if (host) host.keys.push(index);
    else {
      const start = keys[index]?.offset ?? 0;
      ranges.push({
        start,
        end: start,
        keys: [index],
        sendOffset: keys[index]?.offset !== undefined,
      });
    }
  }
  return { direct, ranges, totalsOnly };
}

/**
 * Keeps a fetched range for `policy`'s lifetimes counted from `since`; what it returns settles once
 * the range is written where the fleet reads it.
 */
type Keep = (
  covering: RepositoryList,
  start: number,
  policy: CachePolicy,
  since: number,
) => Promise<unknown> | undefined;

/** Fetches a range and keeps it under the strictest policy of its calls. */
async function readRange(
  client: PageSource,
  call: CallContext,
  range: Range,
  ends: readonly number[],
  cap: PageCap,
  keep: Keep | undefined,
): Promise<{ covering: RepositoryList; failure?: Error; written?: Promise<unknown> | undefined }> {
  if (!keep) return fetchRange(client, call, range, ends, cap);
  let since = Date.now();
  const attempts: CompletedCall[] = [];
  const observed: CallContext = {
    ...call,
    onCall: (completed) => {
      call.onCall?.(completed);
      attempts.push(completed);
      // A joined call went out before this range asked: what it read is as old as that.
      since = Math.min(since, Date.now() - completed.durationMs);
    },
  };
  const read = await fetchRange(client, observed, range, ends, cap);
  if (read.failure) return read;
  const reads = readsPolicy(attempts);
  if (reads.unpoliced || !reads.policy) return read;
  return { ...read, written: keep(read.covering, range.start, reads.policy, since) };
}

/** The upstream refused the caller's credential: what was kept for it is no longer its to read. */
function endsTheRight(error: unknown): boolean {
  const status = error instanceof UpstreamError ? error.upstream.status : undefined;
  return status === 401 || status === 403;
}

const pageEnd = (key: PageQuery) => (key.offset ?? 0) + (key.limit ?? 0);

function plannedCalls(range: Range, cap: number | undefined): number {
  const limit = range.end - range.start;
  return cap === undefined || cap <= 0 || limit <= cap ? 1 : Math.ceil(limit / cap);
}

/**
 * A cap is trusted once two short answers agree: one may be odd, and every caller plans by it. A
 * larger answer disproves it (docs/upstream.md#page-size).
 */
function updatePageCap(cap: PageCap, asked: number, got: number, more: boolean): void {
  if (cap.value !== undefined && got > cap.value) cap.value = undefined;
  if (cap.seen !== undefined && got > cap.seen) cap.seen = undefined;
  if (got === 0 || got >= asked || !more || got === cap.value) return;
  if (got === cap.seen) {
    cap.value = got;
    cap.seen = undefined;
  } else cap.seen = got;
}

/**
 * Fetches the range, and the rest of a short answer, page by page (`ends`, in order): the next
 * page's calls must fit in the budget, or the fill stops there with `failure`. A failure of the
 * first call is thrown.
 */
async function fetchRange(
  client: PageSource,
  call: CallContext,
  range: Range,
  ends: readonly number[],
  cap: PageCap,
): Promise<{ covering: RepositoryList; failure?: Error }> {
  const offset = range.start;
  const limit = range.end - range.start;
  const fetchPart = async (partOffset: number | undefined, fetched: number) => {
    const asked = limit - fetched;
    const { value, joined } = await client.send(
      listRepositories,
      { limit: asked, offset: partOffset },
      call,
    );
    const got = value.repositories.length;
    // A joined answer taught the call that sent it: counted again, it would agree with itself.
    if (!joined) updatePageCap(cap, asked, got, offset + fetched + got < value.total);
    return value;
  };
  const first = await fetchPart(range.sendOffset ? offset : undefined, 0);
  const items: Repository[] = [...first.repositories];
  let total = first.total;
  let last = items.length;
  try {
    // An empty answer makes no progress: what came is the page.
    while (last > 0 && items.length < limit && offset + items.length < total) {
      const covered = offset + items.length;
      const goal = Math.min(ends.find((end) => end > covered) ?? range.end, total);
      ensureCalls(call.budget, Math.ceil((goal - covered) / last));
      const next = await fetchPart(covered, items.length);
      items.push(...next.repositories);
      total = next.total;
      last = next.repositories.length;
    }
  } catch (error) {
    return { covering: { ...first, repositories: items, total }, failure: error as Error };
  }
  return { covering: { ...first, repositories: items, total } };
}

/** Makes sure `needed` calls are in the range's reservation, or fails it with none spent. */
function ensureCalls(budget: CallBudget | undefined, needed: number): void {
  if (!budget || budget.left >= needed || budget.extend(needed - budget.left)) return;
  throw new UpstreamBudgetError(budget.limit);
}
