import DataLoader from 'dataloader';
import { type InFlight, joinKey } from '../cache/join.js';
import { readsPolicy } from '../cache/policy.js';
import type { CachedRange, RangeCache } from '../cache/ranges.js';
import type { Refreshes } from '../cache/refresh.js';
import { UpstreamBudgetError } from '../errors.js';
import type { CacheLookup } from '../telemetry/metrics.js';
import { isUpstreamFault } from './breaker.js';
import type { CallBudget } from './budget.js';
import type { CallContext, CompletedCall } from './client.js';
import { listRepositories, type PageQuery } from './endpoints.js';
import type { Repository, RepositoryList } from './repository-list.js';

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
 * Per request: they hold its credentials and answers. Only calls in flight (src/cache/join.ts)
 * and kept ranges (src/cache/ranges.ts) are shared, and only between alike upstream inputs.
 */
export function createLoaders(
  client: PageSource,
  call: CallContext,
  options: LoaderOptions,
): Loaders {
  // Per page key, the fields that asked for it (their paths, or '' when not shown).
  const callers = new Map<string, string[]>();
  const repositoryPage = new DataLoader<PageQuery, RepositoryList, string>(
    (keys) => loadPages(client, call, options, keys, callers),
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

/** A call that brought `total`, for the pages of no items: any call of the batch will do. */
type Brought = { list: RepositoryList; sentOffset: boolean } | undefined;

/** Merges pages into covering ranges, answers them from kept ranges or calls, slices them back. */
async function loadPages(
  client: PageSource,
  call: CallContext,
  options: LoaderOptions,
  keys: readonly PageQuery[],
  callers: ReadonlyMap<string, string[]>,
): Promise<Array<RepositoryList | Error>> {
  const results: Array<RepositoryList | Error> = new Array(keys.length);
  const { direct, ranges, totalsOnly } = planRanges(keys, options.maxCoalescedRange);
  let brought: Brought;
  const bring = (list: RepositoryList, sentOffset: boolean) => {
    brought ??= { list, sentOffset };
  };
  const fieldsOf = (indexes: readonly number[]) =>
    indexes.flatMap((index) => callers.get(pageKey(keys[index] as PageQuery)) ?? ['']);

  const { ranges: kept } = options;
  const answerKept = (range: Range, hit: CachedRange) => {
    bring(hit.covering, range.sendOffset);
    answerRange(keys, results, range, hit.covering);
    options.onCachedRange?.(hit, call.showCalls ? fieldsOf(range.keys) : undefined);
  };
  // A range kept ranges cover answers with no call (docs/caching.md#ranges, #stale-answers).
  const fetched = kept
    ? ranges.filter((range) => {
        const hit = kept.lookup(call, range.start, range.end, 'stale-while-revalidate');
        options.onLookup?.(ROUTE, hit?.stale?.rule ?? (hit ? 'hit' : 'miss'));
        if (!hit) return true;
        answerKept(range, hit);
        if (hit.stale) refresh(client, call, range, rangeEnds(keys, range), options, kept);
        return false;
      })
    : ranges;

  const units: Unit[] = [
    ...direct.map((index) => ({
      keys: [index],
      calls: 1,
      load: async (unitCall: CallContext) => {
        const key = keys[index] as PageQuery;
        const { value: page } = await client.send(listRepositories, key, unitCall);
        bring(page, key.offset !== undefined);
        results[index] = page;
      },
    })),
    ...fetched.map((range) => ({
      keys: range.keys,
      calls: plannedCalls(range, options.pageCap.value),
      load: async (unitCall: CallContext) => {
        const ends = rangeEnds(keys, range);
        const read = await readRange(client, unitCall, range, ends, options.pageCap, kept).catch(
          (failure: unknown) => ({ covering: undefined, failure: failure as Error }),
        );
        // Never after a 4xx: only an upstream fault answers from a kept range (stale-if-error).
        if (read.failure && kept && isUpstreamFault(read.failure)) {
          const hit = kept.lookup(call, range.start, range.end, 'stale-if-error');
          if (hit?.stale) options.onLookup?.(ROUTE, 'stale-if-error');
          if (hit) return answerKept(range, hit);
        }
        if (!read.covering) throw read.failure;
        bring(read.covering, range.sendOffset);
        answerRange(keys, results, range, read.covering, read.failure);
      },
    })),
  ].sort((a, b) => Math.min(...a.keys) - Math.min(...b.keys));

  await runUnits(units, call, fieldsOf, results);
  answerTotalsOnly(keys, results, totalsOnly, brought);
  return results;
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

/** A range's pages, sliced from what covers it (fetched or kept). */
function answerRange(
  keys: readonly PageQuery[],
  results: Array<RepositoryList | Error>,
  range: Range,
  covering: RepositoryList,
  failure?: Error,
): void {
  const covered = range.start + covering.repositories.length;
  for (const index of range.keys) {
    const key = keys[index] as PageQuery;
    // Cut short: the pages it finished answer; those it did not get its failure.
    if (failure && key.limit !== 0 && Math.min(pageEnd(key), covering.total) > covered) {
      results[index] = failure;
      continue;
    }
    const from = (key.offset ?? 0) - range.start;
    results[index] = {
      ...covering,
      repositories: from < 0 ? [] : covering.repositories.slice(from, from + (key.limit ?? 0)),
      // An omitted offset is the upstream's default (0); echo what it said when it was asked alone.
      offset: key.offset ?? (range.start === 0 ? covering.offset : 0),
    };
  }
}

/**
 * Reserves every unit's planned calls before any call; a unit whose plan does not fit still gets
 * its first call from what is left (docs/operations.md#limits).
 */
async function runUnits(
  units: readonly Unit[],
  call: CallContext,
  fieldsOf: (indexes: readonly number[]) => string[],
  results: Array<RepositoryList | Error>,
): Promise<void> {
  const budget = call.budget;
  const planned = units.map((unit) => budget?.reserve(unit.calls));
  const reservations = planned.map((reservation) => reservation ?? budget?.reserve(1));
  await Promise.all(
    units.map(async (unit, index) => {
      const reservation = reservations[index];
      if (budget && !reservation) {
        for (const index of unit.keys) results[index] = new UpstreamBudgetError(budget.limit);
        return;
      }
      const fields = fieldsOf(unit.keys);
      const unitCall: CallContext = {
        ...call,
        callers: fields.length,
        fields: call.showCalls ? fields : undefined,
      };
      if (reservation) unitCall.budget = reservation;
      try {
        await unit.load(unitCall);
      } catch (error) {
        for (const index of unit.keys) results[index] = error as Error;
      } finally {
        reservation?.release();
      }
    }),
  );
}

/** A page of no items whose range failed answers from any call that brought `total`. */
function answerTotalsOnly(
  keys: readonly PageQuery[],
  results: Array<RepositoryList | Error>,
  totalsOnly: readonly number[],
  brought: Brought,
): void {
  for (const index of totalsOnly) {
    if (!brought || !(results[index] instanceof Error)) continue;
    const key = keys[index] as PageQuery;
    results[index] = {
      ...brought.list,
      repositories: [],
      offset: key.offset ?? (brought.sentOffset ? 0 : brought.list.offset),
    };
  }
}

const rangeEnds = (keys: readonly PageQuery[], range: Range) =>
  range.keys.map((index) => pageEnd(keys[index] as PageQuery)).sort((a, b) => a - b);

/** Fetches a range and keeps it in `kept` under the strictest policy of its calls. */
async function readRange(
  client: PageSource,
  call: CallContext,
  range: Range,
  ends: readonly number[],
  cap: PageCap,
  kept: RangeCache | undefined,
): Promise<{ covering: RepositoryList; failure?: Error }> {
  if (!kept) return fetchRange(client, call, range, ends, cap);
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
  if (!read.failure) {
    const reads = readsPolicy(attempts);
    if (!reads.unpoliced) kept.keep(call, read.covering, range.start, reads.policy, since);
  }
  return read;
}

/** The caller's credential and forwarded headers, none of its request's budget, signal or log. */
function refresh(
  client: PageSource,
  call: CallContext,
  range: Range,
  ends: readonly number[],
  options: LoaderOptions,
  ranges: RangeCache,
): void {
  const { authorization, caller, forwarded, requestId } = call;
  const key = joinKey(
    listRepositories,
    { limit: range.end - range.start, offset: range.start },
    call,
  );
  options.refreshes?.start(key, ROUTE, async (signal) => {
    const own: CallContext = { authorization, caller, forwarded, requestId, signal };
    const { failure } = await readRange(client, own, range, ends, options.pageCap, ranges);
    if (failure) throw failure;
  });
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
