import { renderGraphiQL } from '@graphql-yoga/render-graphiql';
import { createYoga } from 'graphql-yoga';
import type { Config } from './config.js';
import { createContextFactory, type RequestContext } from './context.js';
import { maskError } from './errors.js';
import { graphiqlTabs } from './graphiql-examples.js';
import { schema } from './schema/index.js';
import type { UpstreamClient } from './upstream/client.js';

export interface AppDeps {
  config: Config;
  client: UpstreamClient;
  /** Where unexpected errors are reported; their details never reach the client. */
  logError?: (error: unknown) => void;
}

export function createApp({ config, client, logError = console.error }: AppDeps) {
  return createYoga<Record<string, never>, RequestContext>({
    schema,
    context: createContextFactory({ config, client }),
    graphqlEndpoint: '/graphql',
    landingPage: false,
    // Served from the package itself: these machines (and many intranets) cannot reach a CDN.
    renderGraphiQL,
    graphiql: {
      title: 'GraphQL facade',
      defaultTabs: graphiqlTabs,
      shouldPersistHeaders: false,
    },
    maskedErrors: {
      maskError: (error) => maskError(error, logError),
    },
  });
}
