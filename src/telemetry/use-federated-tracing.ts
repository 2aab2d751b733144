import { useApolloInlineTrace } from '@graphql-yoga/plugin-apollo-inline-trace';
import { execute, type GraphQLSchema, lexicographicSortSchema } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { usesIncrementalDelivery } from '../documents.js';

/** What a gateway sends on the requests whose trace it wants (Apollo Gateway, Apollo Router). */
export const TRACE_HEADER = 'apollo-federation-include-trace';

/** True when the request asks for its federated trace. */
export function asksForTrace(request: Request): boolean {
  return request.headers.get(TRACE_HEADER) === 'ftv1';
}

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
 * `extensions.ftv1`, Apollo's federated trace, for a request that asks for it: the trace of
 * `@graphql-yoga/plugin-apollo-inline-trace`, without its cost to the requests that do not ask.
 *
 * The library times each field by wrapping every resolver of the schema it is given
 * (`@envelop/on-resolve`), which would make every request pay, and graphql-jit compile every
 * field as a resolver call. Here its wrapping is applied to a copy of the schema made once at
 * start, and only a request that asks for the trace is executed over that copy (by graphql-js,
 * since graphql-jit caches its compiled queries by document alone); every other request keeps
 * the untouched schema and graphql-jit, and pays a header look-up. The library's other hooks run
 * as they are: they do nothing for a request that did not ask.
 *
 * Its stage comes after `jit` in the pipeline: the executor set last is the one that runs.
 */
export function useFederatedTracing(): Plugin {
  const library = useApolloInlineTrace({ ignoreRequest: (request) => !asksForTrace(request) });
  const wrapResolvers: SchemaChangeHook[] = [];
  let served: GraphQLSchema | undefined;
  let traced: GraphQLSchema | undefined;
  return {
    onPluginInit(payload) {
      for (const { onSchemaChange, ...hooks } of unfold(library as Plugin, payload)) {
        if (onSchemaChange) wrapResolvers.push(onSchemaChange);
        payload.addPlugin(hooks);
      }
    },
    onSchemaChange({ schema }) {
      if (schema === served) return;
      served = schema;
      // New type and field objects in the same order: the served schema is already sorted
      // (Pothos's subgraph schema), and introspection's built-in types, shared, are never wrapped.
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
