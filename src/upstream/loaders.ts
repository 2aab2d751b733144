import DataLoader from 'dataloader';
import type { InFlight } from '../cache/join.js';
import { joinKey } from '../cache/join.js';
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

/** One page as a resolver asks for it; undefined means "not sent, the upstream's default". */
export type PageKey = PageQuery;

export interface Loaders {
  repositoryPage: DataLoader<PageKey, RepositoryList, string>;
  /**
   * Loads a page for one field: the field is counted among the callers of the upstream call that
   * serves the page (de-duplicated and merged pages share one), and named when the request shows
   * its upstream calls. `path` is only called then.
   */
  page(key: PageKey, path: () => string): Promise<RepositoryList>;
}

export interface LoaderOptions {
  /** The largest covering range that several requested pages may be merged into. */
  maxCoalescedRange: number;
  /** Shared by the requests of one app: what the upstream's short answers taught. */
  pageCap: PageCap;
  /** Ranges kept per caller (src/cache/ranges.ts); none: every range is fetched. */
  ranges?: RangeCache | undefined;
  /** Told of every range answered from `ranges`, with the fields it served. */
  onCachedRange?: ((hit: CachedRange, fields: readonly string[] | undefined) => void) | undefined;
  /** Where a kept range past its max-age is refreshed (stale-while-revalidate); none: never. */
  refreshes?: Refreshes | undefined;
  /** Told of every look-up in `ranges`, by route and what it found. */
  onLookup?: ((route: string, result: CacheLookup) => void) | undefined;
}

const ROUTE = `${listRepositories.method} ${listRepositories.path}`;

/** The loaders' way upstream: the client, through the calls in flight that they may join. */
export type PageSource = Pick<InFlight, 'send'>;

/**
 * The upstream's largest page as its short answers show it (the spec does not say), so that a
 * page's fill calls are planned before its first call.
 */
export interface PageCap {
  /** Trusted for planning: two short answers agreed on it. Undefined: plan one call a page. */
  value: number | undefined;
  /** The size one short answer showed, until another agrees. */
  seen: number | undefined;
}

export function createPageCap(): PageCap {
  return { value: undefined, seen: undefined };
}

const pageKey = (key: PageKey) => `${key.limit ?? ''}:${key.offset ?? ''}`;

/**
 * Fresh loaders for one GraphQL request: they hold that request's credentials and answers, so
 * they are never shared with another request. Only the calls still in flight are, through
 * `client` (src/cache/join.ts), and the list ranges kept for their lifetime
 * (`options.ranges`, src/cache/ranges.ts), and only with requests whose upstream inputs
 * are the same.
 */
export function createLoaders(
  client: PageSource,
  call: CallContext,
  options: LoaderOptions,
): Loaders {
  // Per page key, the fields that asked for it (their paths, or '' when not shown).
  const callers = new Map<string, string[]>();
  const repositoryPage = new DataLoader<PageKey, RepositoryList, string>(
    (keys) => loadPages(client, call, options, keys, callers),
    { cacheKeyFn: pageKey },
  );
  return {
    repositoryPage,
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
  /** Whether any page of the range named an offset; an omitted one is not sent (contract). */
  sendOffset: boolean;
}

/** A call-making unit of a batch: its keys, the calls it is expected to need, and its load. */
interface Unit {
  keys: number[];
  calls: number;
  /** Settles the unit's keys; what it throws fails all of them. */
  load: (unitCall: CallContext) => Promise<void>;
}

/** A call that brought `total`, for the pages of no items: any call of the batch will do. */
type Brought = { list: RepositoryList; sentOffset: boolean } | undefined;

/**
 * Pages with a known limit are grouped into covering ranges (overlapping or adjacent, within the
 * bound), each fetched once and sliced back; pages at the upstream's default size cannot be
 * merged because that size is unknown, so they go as they are.
 */
async function loadPages(
  client: PageSource,
  call: CallContext,
  options: LoaderOptions,
  keys: readonly PageKey[],
  callers: ReadonlyMap<string, string[]>,
): Promise<Array<RepositoryList | Error>> {
  const results: Array<RepositoryList | Error> = new Array(keys.length);
  const { direct, ranges, totalsOnly } = planRanges(keys, options.maxCoalescedRange);
  let brought: Brought;
  const bring = (list: RepositoryList, sentOffset: boolean) => {
    brought ??= { list, sentOffset };
  };
  const fieldsOf = (indexes: readonly number[]) =>
    indexes.flatMap((index) => callers.get(pageKey(keys[index] as PageKey)) ?? ['']);

  // A range this caller's kept ranges cover wholly is answered from them: no call, no budget.
  const { ranges: kept } = options;
  const serve = (range: Range, hit: CachedRange) => {
    bring(hit.covering, range.sendOffset);
    answerRange(keys, results, range, hit.covering);
    options.onCachedRange?.(hit, call.showCalls ? fieldsOf(range.keys) : undefined);
  };
  // Past its max-age within stale-while-revalidate, a kept range answers at once, and one call
  // in the background, made for this caller but outside this request, refreshes it.
  const fetched = kept
    ? ranges.filter((range) => {
        const hit = kept.lookup(call, range.start, range.end, 'stale-while-revalidate');
        options.onLookup?.(ROUTE, hit?.stale?.rule ?? (hit ? 'hit' : 'miss'));
        if (!hit) return true;
        serve(range, hit);
        if (hit.stale) refresh(client, call, range, rangeEnds(keys, range), options, kept);
        return false;
      })
    : ranges;

  // Each call-making unit of the batch, in field order, with the calls it is expected to need.
  const units: Unit[] = [
    ...direct.map((index) => ({
      keys: [index],
      calls: 1,
      load: async (unitCall: CallContext) => {
        const key = keys[index] as PageKey;
        const { value: page } = await client.send(listRepositories, key, unitCall);
        bring(page, key.offset !== undefined);
        results[index] = page;
      },
    })),
    ...fetched.map((range) => ({
      keys: range.keys,
      calls: plannedCalls(range, options.pageCap.value),
      load: async (unitCall: CallContext) => {
        const keeping = kept && { ranges: kept, caller: call };
        const read = await readRange(
          client,
          unitCall,
          range,
          rangeEnds(keys, range),
          options.pageCap,
          keeping,
        ).catch((failure: unknown) => ({ covering: undefined, failure: failure as Error }));
        // A fault of the upstream's (never a 4xx) answers from this caller's kept range within
        // stale-if-error.
        if (read.failure && kept && isUpstreamFault(read.failure)) {
          const hit = kept.lookup(call, range.start, range.end, 'stale-if-error');
          if (hit?.stale) options.onLookup?.(ROUTE, 'stale-if-error');
          if (hit) return serve(range, hit);
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
 * The batch's plan: the pages at the upstream's default size (sent as they are), the covering
 * ranges of the others by offset, and the pages of no items, each given to a range.
 */
function planRanges(keys: readonly PageKey[], maxCoalescedRange: number) {
  const ranges: Range[] = [];
  // Pages at the upstream's default size go as they are; the others are sorted by offset.
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
  // A page of no items needs only `total`, which any other page of the batch brings too.
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
  keys: readonly PageKey[],
  results: Array<RepositoryList | Error>,
  range: Range,
  covering: RepositoryList,
  failure?: Error,
): void {
  const covered = range.start + covering.repositories.length;
  for (const index of range.keys) {
    const key = keys[index] as PageKey;
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

/** Runs the units at once, each within what the request's budget reserved for it. */
async function runUnits(
  units: readonly Unit[],
  call: CallContext,
  fieldsOf: (indexes: readonly number[]) => string[],
  results: Array<RepositoryList | Error>,
): Promise<void> {
  const budget = call.budget;
  // Reserved synchronously, unit after unit, before any of them has made its first call. A plan
  // rests on a learned page size that may be wrong: a unit whose plan does not fit is not refused
  // on its word but gets its first call from what the units that fit leave, and its answers decide
  // (a fill call it cannot finish is still never made).
  const planned = units.map((unit) => budget?.reserve(unit.calls));
  const reservations = planned.map((reservation) => reservation ?? budget?.reserve(1));
  await Promise.all(
    units.map(async (unit, index) => {
      const reservation = reservations[index];
      if (budget && !reservation) {
        for (const index of unit.keys) results[index] = new UpstreamBudgetError(budget.limit);
        return;
      }
      const served = fieldsOf(unit.keys);
      const unitCall: CallContext = {
        ...call,
        callers: served.length,
        fields: call.showCalls ? served : undefined,
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

/** A page of no items whose host failed still answers from any call that brought `total`. */
function answerTotalsOnly(
  keys: readonly PageKey[],
  results: Array<RepositoryList | Error>,
  totalsOnly: readonly number[],
  brought: Brought,
): void {
  for (const index of totalsOnly) {
    if (!brought || !(results[index] instanceof Error)) continue;
    const key = keys[index] as PageKey;
    results[index] = {
      ...brought.list,
      repositories: [],
      offset: key.offset ?? (brought.sentOffset ? 0 : brought.list.offset),
    };
  }
}

/** Where a range's pages end, in order. */
const rangeEnds = (keys: readonly PageKey[], range: Range) =>
  range.keys.map((index) => pageEnd(keys[index] as PageKey)).sort((a, b) => a - b);

/**
 * Fetches a range and, with `keeping`, keeps it for the caller under the strictest policy of its
 * calls (one without a policy keeps nothing).
 */
async function readRange(
  client: PageSource,
  call: CallContext,
  range: Range,
  ends: readonly number[],
  cap: PageCap,
  keeping: { ranges: RangeCache; caller: CallContext } | undefined,
): Promise<{ covering: RepositoryList; failure?: Error }> {
  if (!keeping) return fetchRange(client, call, range, ends, cap);
  let since = Date.now();
  const attempts: CompletedCall[] = [];
  const observed: CallContext = {
    ...call,
    onCall: (completed) => {
      call.onCall?.(completed);
      attempts.push(completed);
      // A call joined in flight went out before this range asked for it: what it read is as old
      // as that, for its lifetime and for a mutation in between.
      since = Math.min(since, Date.now() - completed.durationMs);
    },
  };
  const read = await fetchRange(client, observed, range, ends, cap);
  if (!read.failure) {
    const reads = readsPolicy(attempts);
    if (!reads.unpoliced)
      keeping.ranges.keep(keeping.caller, read.covering, range.start, reads.policy, since);
  }
  return read;
}

/**
 * Refreshes a kept range in the background: the caller's credential and forwarded headers, none
 * of its request's budget, signal or log; joined with any refresh of the same range under way.
 */
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
    const { failure } = await readRange(client, own, range, ends, options.pageCap, {
      ranges,
      caller: call,
    });
    if (failure) throw failure;
  });
}

/** Where a page ends: its offset (the upstream's default, 0, when omitted) plus its limit. */
const pageEnd = (key: PageKey) => (key.offset ?? 0) + (key.limit ?? 0);

/** The calls a range is expected to need: one, or as many as the known page cap makes it. */
function plannedCalls(range: Range, cap: number | undefined): number {
  const limit = range.end - range.start;
  return cap === undefined || cap <= 0 || limit <= cap ? 1 : Math.ceil(limit / cap);
}

/**
 * A short answer (fewer items than asked while more exist) shows the upstream's page cap, but one
 * answer may be odd (cut short by a fault, a deploy, one account's quirk), and the cap is shared
 * by every caller of the app: a size learned too small makes everyone's plans too large. So a
 * size is trusted only once a second short answer agrees, and a short answer that disagrees
 * replaces the one waiting (so a cap the upstream lowers is learned again). No answer holds more
 * items than the upstream's cap, so a larger one, short or full, disproves what was learned.
 */
function learn(cap: PageCap, asked: number, got: number, more: boolean): void {
  if (cap.value !== undefined && got > cap.value) cap.value = undefined;
  if (cap.seen !== undefined && got > cap.seen) cap.seen = undefined;
  if (got === 0 || got >= asked || !more || got === cap.value) return;
  if (got === cap.seen) {
    cap.value = got;
    cap.seen = undefined;
  } else cap.seen = got;
}

/**
 * Fetches [offset, offset + limit). The upstream's maximum page size is not specified: when it
 * answers short while `total` says more exist, the rest is fetched rather than returning a short
 * page. A merged range is filled page by page (`ends`, where its pages end, in order): before the
 * calls that finish the next page, they must fit in the range's budget, or the fill stops there,
 * so the pages already finished answer and no call is spent on a page that cannot be finished.
 * What stopped it is `failure`; a failure of the first call is thrown.
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
  const { value: first, joined } = await client.send(
    listRepositories,
    { limit, offset: range.sendOffset ? offset : undefined },
    call,
  );
  const items: Repository[] = [...first.repositories];
  let total = first.total;
  let last = items.length;
  // A joined answer is one the caller that sent it learns from: counted again, it would agree
  // with itself.
  if (!joined) learn(cap, limit, last, offset + last < total);
  try {
    // An upstream that answers an empty page makes no progress: what it gave is the answer.
    while (last > 0 && items.length < limit && offset + items.length < total) {
      const covered = offset + items.length;
      const goal = Math.min(ends.find((end) => end > covered) ?? range.end, total);
      ensureCalls(call.budget, Math.ceil((goal - covered) / last));
      const { value: next, joined: nextJoined } = await client.send(
        listRepositories,
        { limit: limit - items.length, offset: covered },
        call,
      );
      items.push(...next.repositories);
      total = next.total;
      if (!nextJoined)
        learn(
          cap,
          limit - (items.length - next.repositories.length),
          next.repositories.length,
          offset + items.length < total,
        );
      last = next.repositories.length;
    }
  } catch (error) {
    return { covering: { ...first, repositories: items, total }, failure: error as Error };
  }
  return { covering: { ...first, repositories: items, total } };
}

/** Makes sure `needed` calls are in this range's reservation, or fails it with none spent. */
function ensureCalls(budget: CallBudget | undefined, needed: number): void {
  if (!budget || budget.left >= needed || budget.extend(needed - budget.left)) return;
  throw new UpstreamBudgetError(budget.limit);
}
