import { useApolloInlineTrace } from '@graphql-yoga/plugin-apollo-inline-trace';
import { execute, type GraphQLSchema, lexicographicSortSchema } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { usesIncrementalDelivery } from '../request-document.js';

/** What Apollo Gateway and Apollo Router send on the requests whose trace they want. */
const asksForTrace = (request: Request) =>
  request.headers.get('apollo-federation-include-trace') === 'ftv1';

type PluginInitPayload = Parameters<NonNullable<Plugin['onPluginInit']>>[0];
type SchemaChangeHook = NonNullable<Plugin['onSchemaChange']>;

/** `plugin` and the plugins it adds in `onPluginInit`, initialised here rather than by Envelop. */
function unfold(plugin: Plugin, payload: PluginInitPayload): Plugin[] {
  const added: Plugin[] = [];
  plugin.onPluginInit?.({ ...payload, addPlugin: (child) => void added.push(child as Plugin) });
  const { onPluginInit: _initialised, ...hooks } = plugin;
  return [hooks, ...added.flatMap((child) => unfold(child, payload))];
}

/**
 * `extensions.ftv1` (docs/observability.md#apollo-federated-tracing-ftv1): only a request that
 * asks runs over a copy of the schema whose resolvers the library wraps, by graphql-js (graphql-jit
 * caches by document alone); the others keep graphql-jit. Its stage must come after `jit`.
 */
export function useFederatedTracing(): Plugin {
  const library = useApolloInlineTrace({ ignoreRequest: (request) => !asksForTrace(request) });
  const wrapResolvers: SchemaChangeHook[] = [];
  let original: GraphQLSchema | undefined;
  let traced: GraphQLSchema | undefined;
  return {
    onPluginInit(payload) {
      for (const { onSchemaChange, ...hooks } of unfold(library as Plugin, payload)) {
        if (onSchemaChange) wrapResolvers.push(onSchemaChange);
        payload.addPlugin(hooks);
      }
    },
    onSchemaChange({ schema }) {
      if (schema === original) return;
      original = schema;
      // New type and field objects in the same (already sorted) order; built-in types are shared.
      const copy = lexicographicSortSchema(schema);
      for (const wrap of wrapResolvers) wrap({ schema: copy, replaceSchema: () => {} });
      traced = copy;
    },
    onExecute({ args, setExecuteFn }) {
      const { request } = args.contextValue;
      const schema = traced;
      if (!schema || !asksForTrace(request) || usesIncrementalDelivery(args.document)) return;
      setExecuteFn((tracedArgs) => execute({ ...tracedArgs, schema }));
    },
  };
}
