// Bundled with esbuild for the allowed origin's page: urql and Apollo Client exactly as a
// frontend sets them up, with their default settings and nothing added for the facade.
import { ApolloClient, gql, HttpLink, InMemoryCache } from '@apollo/client';
import { Client, cacheExchange, fetchExchange } from '@urql/core';

const REPOSITORIES = '{ repositories(limit: 3) { total items { id defaultBranch } } }';

export interface Outcome {
  data?: unknown;
  error?: string;
}

async function urqlQuery(url: string): Promise<Outcome> {
  const client = new Client({ url, exchanges: [cacheExchange, fetchExchange] });
  const result = await client.query(REPOSITORIES, {}).toPromise();
  return { data: result.data, error: result.error?.message };
}

async function apolloQuery(url: string): Promise<Outcome> {
  const client = new ApolloClient({ link: new HttpLink({ uri: url }), cache: new InMemoryCache() });
  try {
    const result = await client.query({ query: gql(REPOSITORIES) });
    return { data: result.data, error: result.error?.message };
  } catch (error) {
    return { error: String(error) };
  }
}

/** Every result urql reports for a deferred query, the first (without the deferred part) included. */
function urqlDefer(url: string, query: string): Promise<Outcome[]> {
  const client = new Client({ url, exchanges: [cacheExchange, fetchExchange] });
  const outcomes: Outcome[] = [];
  return new Promise((resolve) => {
    const { unsubscribe } = client.query(query, {}).subscribe((result) => {
      outcomes.push({ data: result.data, error: result.error?.message });
      if (!result.hasNext) {
        unsubscribe();
        resolve(outcomes);
      }
    });
  });
}

Object.assign(globalThis, { clients: { urqlQuery, apolloQuery, urqlDefer } });
