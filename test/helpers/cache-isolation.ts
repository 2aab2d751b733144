// The response cache's isolation property, run in memory (test/app) and on Redis (test/e2e):
// random callers (tokens, forwarded headers, a header that is not forwarded) run random queries
// and mutations in turn, and no answer ever differs from what the same request gets with no cache,
// and no hit ever serves a request whose credential, forwarded headers, operation or variables
// were not seen, since the caller's last mutation, with the same values.
import fc from 'fast-check';
import { expect } from 'vitest';
import { postGraphQL } from './harness.js';

type App = { fetch: (url: string, init: RequestInit) => Promise<Response> | Response };

/** The forwarded header the sandbox's repository list varies on (and names in its Vary). */
export const TENANT = 'x-tenant';

const OPERATIONS = [
  {
    query:
      'query($limit: Int, $offset: Int) { repositories(limit: $limit, offset: $offset) { total offset items { id defaultBranch } } }',
    variables: fc.record({
      limit: fc.integer({ min: 0, max: 5 }),
      offset: fc.integer({ min: 0, max: 8 }),
    }),
  },
  {
    query:
      'query($first: Int) { repositoriesConnection(first: $first) { totalCount edges { cursor node { id } } } }',
    variables: fc.record({ first: fc.integer({ min: 1, max: 4 }) }),
  },
  {
    query:
      '{ a: repositories(limit: 2) { items { id } } b: repositories(limit: 2, offset: 2) { items { id } } }',
    variables: fc.constant({}),
  },
  {
    query:
      'mutation($domain: String!) { createDomainVerification(input: { domain: $domain }) { domain } }',
    variables: fc.record({ domain: fc.constantFrom('example.com', 'example.org') }),
  },
];

const caller = fc.record({
  token: fc.option(fc.constantFrom('alice', 'bob', 'carol'), { nil: undefined }),
  tenant: fc.option(fc.constantFrom('t1', 't2', ''), { nil: undefined }),
  // Not forwarded: it never reaches the upstream, so it must make no difference either way.
  other: fc.option(fc.constantFrom('x', 'y'), { nil: undefined }),
});

const operation = fc.integer({ min: 0, max: OPERATIONS.length - 1 }).chain((index) =>
  (OPERATIONS[index] as (typeof OPERATIONS)[number]).variables.map((variables) => ({
    index,
    variables,
  })),
);

// A few callers and a few operations, then a sequence that mixes them: the same operation asked
// by callers who differ in one input is what a wrong key would answer from the cache.
const requests = fc
  .tuple(
    fc.array(caller, { minLength: 1, maxLength: 4 }),
    fc.array(operation, { minLength: 1, maxLength: 3 }),
  )
  .chain(([callers, operations]) =>
    fc
      .array(
        fc.tuple(
          fc.integer({ min: 0, max: callers.length - 1 }),
          fc.integer({ min: 0, max: operations.length - 1 }),
        ),
        { minLength: 2, maxLength: 12 },
      )
      .map((order) =>
        order.map(([who, what]) => ({
          ...(callers[who] as (typeof callers)[number]),
          operation: operations[what] as (typeof operations)[number],
        })),
      ),
  );

export interface IsolationOptions {
  /** A fresh app with the response cache on (a fresh store), for one run. */
  cached: () => App | Promise<App>;
  /** The same settings with the response cache off: the oracle. */
  uncached: App;
  numRuns: number;
}

/** Runs the property; resolves with how many answers were hits, to show the cache was exercised. */
export async function checkCacheIsolation({ cached, uncached, numRuns }: IsolationOptions) {
  let hits = 0;
  await fc.assert(
    fc.asyncProperty(requests, async (requests) => {
      const app = await cached();
      // What a hit may serve, per session: what it asked since its last mutation.
      const seen = new Map<string, Set<string>>();
      for (const { token, tenant, other, operation } of requests) {
        const { query } = OPERATIONS[operation.index] as (typeof OPERATIONS)[number];
        const headers: Record<string, string> = {};
        if (token !== undefined) headers.authorization = `Bearer ${token}`;
        if (tenant !== undefined) headers[TENANT] = tenant;
        if (other !== undefined) headers['x-other'] = other;
        const session = JSON.stringify([token ?? null, tenant ?? null]);
        const key = JSON.stringify([query, operation.variables]);
        const answer = await postGraphQL(app, query, operation.variables, headers);
        const oracle = await postGraphQL(uncached, query, operation.variables, headers);
        expect(answer.data).toEqual(oracle.data);
        expect(answer.errors?.map((e) => e.extensions.code)).toEqual(
          oracle.errors?.map((e) => e.extensions.code),
        );
        const hit =
          (answer.extensions?.upstreamCalls as { cache?: string } | undefined)?.cache === 'hit';
        if (hit) {
          hits++;
          const asked = seen.get(session)?.has(key) ?? false;
          expect(asked, `a hit for ${session} ${key}, never answered to it`).toBe(true);
        }
        if (query.startsWith('mutation')) seen.delete(session);
        else if (!answer.errors) {
          const keys = seen.get(session) ?? new Set<string>();
          keys.add(key);
          seen.set(session, keys);
        }
      }
    }),
    { numRuns },
  );
  return hits;
}
