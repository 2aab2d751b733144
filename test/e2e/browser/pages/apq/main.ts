// A page on another origin using urql with APQ as its documentation sets it up: the default
// persistedExchange (SHA-256 of the query, hash-only GET first, the query on
// PERSISTED_QUERY_NOT_FOUND) between urql's default exchanges.
import { Client, cacheExchange, fetchExchange } from '@urql/core';
import { persistedExchange } from '@urql/exchange-persisted';

declare const FACADE_URL: string;

const client = new Client({
  url: FACADE_URL,
  exchanges: [cacheExchange, persistedExchange(), fetchExchange],
});

const PAGE = 'query Page($limit: Int!) { repositories(limit: $limit) { total items { id } } }';

/** Called by the test: one query, past urql's cache, and what came of it. */
async function run(limit: number) {
  const result = await client.query(PAGE, { limit }, { requestPolicy: 'network-only' }).toPromise();
  return {
    data: result.data as { repositories: { total: number; items: { id: string }[] } } | undefined,
    codes: result.error?.graphQLErrors.map((error) => error.extensions.code) ?? [],
    networkError: result.error?.networkError?.message,
  };
}

Object.assign(globalThis, { run, ready: true });
