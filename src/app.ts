import { renderGraphiQL } from '@graphql-yoga/render-graphiql';
import { GraphQLError } from 'graphql';
import { createYoga } from 'graphql-yoga';
import type { Config } from './config.js';
import { createContextFactory, type RequestContext } from './context.js';
import { FacadeError } from './errors.js';
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
      maskError(error) {
        if (error instanceof GraphQLError) {
          // Ours: it carries its code (and, located, its path).
          if (error.originalError instanceof FacadeError || error instanceof FacadeError) return error;
          // graphql-js's own errors before execution (bad variables, coercion) are about the
          // caller's input; they carry no code of their own.
          const fromGraphql = !error.originalError || error.originalError instanceof GraphQLError;
          if (fromGraphql && error.path === undefined) {
            (error.extensions as Record<string, unknown>).code ??= 'BAD_USER_INPUT';
            return error;
          }
        }
        logError(error instanceof GraphQLError ? (error.originalError ?? error) : error);
        return new GraphQLError('Internal server error', { extensions: { code: 'INTERNAL_SERVER_ERROR' } });
      },
    },
  });
}
