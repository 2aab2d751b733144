import DataLoader from 'dataloader';
import type { CallContext, UpstreamClient } from './client.js';
import type { Repository, RepositoryList } from './repository-list.js';

/** One page as a resolver asks for it; undefined means "not sent, the upstream's default". */
export interface PageKey {
  limit?: number | undefined;
  offset?: number | undefined;
}

export interface Loaders {
  repositoryPage: DataLoader<PageKey, RepositoryList, string>;
}

export interface LoaderOptions {
  /** The largest covering range that several requested pages may be merged into. */
  maxCoalescedRange: number;
}

/** Follow-up calls that one short page may cause. */
const MAX_FILL_CALLS = 20;

const pageKey = (key: PageKey) => `${key.limit ?? ''}:${key.offset ?? ''}`;

/**
 * Fresh loaders for one GraphQL request: they hold that request's credentials and answers, so
 * they are never shared with another request.
 */
export function createLoaders(
  client: UpstreamClient,
  call: CallContext,
  options: LoaderOptions,
): Loaders {
  return {
    repositoryPage: new DataLoader<PageKey, RepositoryList, string>(
      (keys) => loadPages(client, call, options, keys),
      { cacheKeyFn: pageKey },
    ),
  };
}

interface Range {
  start: number;
  end: number;
  keys: number[];
  /** Whether any page of the range named an offset; an omitted one is not sent (contract). */
  sendOffset: boolean;
}

/**
 * Pages with a known limit are grouped into covering ranges (overlapping or adjacent, within the
 * bound), each fetched once and sliced back; pages at the upstream's default size cannot be
 * merged because that size is unknown, so they go as they are.
 */
async function loadPages(
  client: UpstreamClient,
  call: CallContext,
  options: LoaderOptions,
  keys: readonly PageKey[],
): Promise<Array<RepositoryList | Error>> {
  const results: Array<RepositoryList | Error> = new Array(keys.length);
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
    if (
      last &&
      start <= last.end &&
      Math.max(end, last.end) - last.start <= options.maxCoalescedRange
    ) {
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

  await Promise.all([
    ...direct.map(async (index) => {
      try {
        results[index] = await client.listRepositories(keys[index] as PageKey, call);
      } catch (error) {
        results[index] = error as Error;
      }
    }),
    ...ranges.map(async (range) => {
      try {
        const covering = await fetchRange(client, call, range);
        for (const index of range.keys) {
          const key = keys[index] as PageKey;
          const from = (key.offset ?? 0) - range.start;
          results[index] = {
            ...covering,
            repositories:
              from < 0 ? [] : covering.repositories.slice(from, from + (key.limit ?? 0)),
            // An omitted offset is the upstream's default (0); echo what it said when it was asked alone.
            offset: key.offset ?? (range.start === 0 ? covering.offset : 0),
          };
        }
      } catch (error) {
        for (const index of range.keys) results[index] = error as Error;
      }
    }),
  ]);
  return results;
}

/**
 * Fetches [offset, offset + limit). The upstream's maximum page size is not specified: when it
 * answers short while `total` says more exist, the rest is fetched rather than returning a short
 * page.
 */
async function fetchRange(
  client: UpstreamClient,
  call: CallContext,
  range: Range,
): Promise<RepositoryList> {
  const offset = range.start;
  const limit = range.end - range.start;
  const first = await client.listRepositories(
    { limit, offset: range.sendOffset ? offset : undefined },
    call,
  );
  const items: Repository[] = [...first.repositories];
  let total = first.total;
  // Bounded: a huge `limit` against an upstream with small pages must not become thousands of
  // calls; past the bound the page is returned as far as it got (hasNextPage stays true).
  for (
    let fill = 1;
    fill <= MAX_FILL_CALLS && items.length < limit && offset + items.length < total;
    fill++
  ) {
    const next = await client.listRepositories(
      { limit: limit - items.length, offset: offset + items.length },
      call,
    );
    // An upstream that stops making progress must not loop us forever.
    if (next.repositories.length === 0) break;
    items.push(...next.repositories);
    total = next.total;
  }
  return { ...first, repositories: items, total };
}
