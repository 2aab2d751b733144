// Bundled with esbuild for the allowed origin's page: urql with subscriptionExchange over
// graphql-sse, and Apollo Client with its default HttpLink (multipart HTTP), each set up as their
// docs show, with nothing added for the facade. Events land in `watched[name]` as they come.
import { ApolloClient, gql, HttpLink, InMemoryCache } from '@apollo/client';
import { Client, cacheExchange, fetchExchange, subscriptionExchange } from '@urql/core';
import { createClient as createSseClient } from 'graphql-sse';

const WATCH = `subscription Watch($domain: String!, $code: String) {
  domainDnsCheck(domain: $domain, verificationCode: $code) { host values matches error }
}`;

export interface Watched {
  events: unknown[];
  errors: string[];
  completed: boolean;
}

const watched: Record<string, Watched> = {};

function record(name: string): Watched {
  watched[name] = { events: [], errors: [], completed: false };
  return watched[name];
}

function urqlWatch(name: string, url: string, variables: Record<string, unknown>): void {
  const sse = createSseClient({ url });
  const client = new Client({
    url,
    exchanges: [
      cacheExchange,
      fetchExchange,
      subscriptionExchange({
        forwardSubscription(request) {
          const input = { ...request, query: request.query || '' };
          return {
            subscribe(sink) {
              const unsubscribe = sse.subscribe(input, {
                next: (value) => sink.next(value as never),
                error: (error) => sink.error(error),
                complete: () => {
                  state.completed = true;
                  sink.complete();
                },
              });
              return { unsubscribe };
            },
          };
        },
      }),
    ],
  });
  const state = record(name);
  client.subscription(WATCH, variables).subscribe((result) => {
    if (result.error) state.errors.push(result.error.message);
    // urql reports the last result again when the stream completes (hasNext: false).
    else if (JSON.stringify(result.data) !== JSON.stringify(state.events.at(-1)))
      state.events.push(result.data);
  });
}

function apolloWatch(name: string, url: string, variables: Record<string, unknown>): void {
  const client = new ApolloClient({ link: new HttpLink({ uri: url }), cache: new InMemoryCache() });
  const state = record(name);
  client.subscribe({ query: gql(WATCH), variables }).subscribe({
    next: (result) => {
      if (result.error) state.errors.push(result.error.message);
      else state.events.push(result.data);
    },
    error: (error: unknown) => state.errors.push(String(error)),
    complete: () => {
      state.completed = true;
    },
  });
}

/** A graphql-sse subscription as a page of a site that is not allowed would try it. */
function sseWatch(name: string, url: string, variables: Record<string, unknown>): void {
  const state = record(name);
  createSseClient({ url, retryAttempts: 0 }).subscribe(
    { query: WATCH, variables },
    {
      next: (value) => state.events.push(value),
      error: (error) => state.errors.push(String(error)),
      complete: () => {
        state.completed = true;
      },
    },
  );
}

Object.assign(globalThis, { watched, watches: { urqlWatch, apolloWatch, sseWatch } });
