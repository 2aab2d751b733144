// A page on another origin using APQ as the clients' documentation sets it up. urql: the default
// persistedExchange (SHA-256 of the query, hash-only GET first, the query on
// PERSISTED_QUERY_NOT_FOUND) between urql's default exchanges. Apollo Client: its persisted-query
// link with GET for hashed queries, in front of the default HttpLink.
import { ApolloClient, gql, HttpLink, InMemoryCache } from '@apollo/client';
import { PersistedQueryLink } from '@apollo/client/link/persisted-queries';
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

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, '0')).join('');
}

const apollo = new ApolloClient({
  link: new PersistedQueryLink({ sha256, useGETForHashedQueries: true }).concat(
    new HttpLink({ uri: FACADE_URL }),
  ),
  cache: new InMemoryCache(),
});

/** The same with Apollo Client. */
async function runApollo(limit: number) {
  const result = await apollo.query({
    // Its own operation: a document urql has not stored already.
    query: gql(PAGE.replace('query Page', 'query ApolloPage')),
    variables: { limit },
    fetchPolicy: 'network-only',
  });
  const error = result.error as
    | { errors?: { extensions?: { code?: unknown } }[]; message: string }
    | undefined;
  return {
    data: result.data as { repositories: { total: number; items: { id: string }[] } } | undefined,
    codes: error?.errors?.map((e) => e.extensions?.code) ?? [],
    networkError: error && !error.errors ? error.message : undefined,
  };
}

Object.assign(globalThis, { run, runApollo, ready: true });
