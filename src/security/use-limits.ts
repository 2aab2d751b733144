import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import type { ASTVisitor, GraphQLError, ValidationContext } from 'graphql';
import { NoSchemaIntrospectionCustomRule } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Config } from '../config/load.js';
import { FacadeError } from '../errors.js';

// graphql-armor words every rejection as a "Syntax Error"; these are limits, not syntax.
function limitError(error: GraphQLError): FacadeError {
  return new FacadeError(
    'GRAPHQL_VALIDATION_FAILED',
    error.message.replace(/^Syntax Error: /, ''),
    {},
    { nodes: error.nodes },
  );
}

// Validation rules report every problem found; the token limit runs in the parser, so it throws.
const report = [
  (context: ValidationContext | null, error: GraphQLError) =>
    context?.reportError(limitError(error)),
];
const reject = [
  (_context: ValidationContext | null, error: GraphQLError) => {
    throw limitError(error);
  },
];

/** `_service { sdl }` discloses the schema as introspection does (SUBGRAPH_SDL). */
function NoSubgraphSdlRule(context: ValidationContext): ASTVisitor {
  return {
    Field(node) {
      if (
        node.name.value !== '_service' ||
        context.getParentType() !== context.getSchema().getQueryType()
      )
        return;
      context.reportError(
        new FacadeError(
          'GRAPHQL_VALIDATION_FAILED',
          'The subgraph SDL (`_service`) is not served here: INTROSPECTION=false without SUBGRAPH_SDL=true',
          {},
          { nodes: [node] },
        ),
      );
    },
  };
}

/**
 * graphql-armor's depth, token, alias and directive limits, and the schema disclosure rules
 * (docs/operations.md#limits). Suggestions map the schema: hidden in production.
 */
export function useLimits(config: Pick<Config, 'limits' | 'production'>): Plugin[] {
  const { limits } = config;
  const common = { exposeLimits: true, propagateOnRejection: false, onReject: report };
  const plugins: Plugin[] = [
    EnvelopArmorPlugin({
      blockFieldSuggestion: { enabled: config.production, mask: '' },
      maxTokens: { n: limits.maxTokens, exposeLimits: true, onReject: reject },
      maxDepth: {
        ...common,
        n: limits.maxDepth,
        flattenFragments: true,
        ignoreIntrospection: true,
      },
      maxAliases: { ...common, n: limits.maxAliases },
      maxDirectives: { ...common, n: limits.maxDirectives },
      // use-cost.ts checks the cost, which depends on the variables.
      costLimit: { enabled: false },
    }) as Plugin,
  ];
  const rules = [
    ...(limits.introspection ? [] : [NoSchemaIntrospectionCustomRule]),
    ...(limits.subgraphSdl ? [] : [NoSubgraphSdlRule]),
  ];
  if (rules.length > 0) {
    plugins.push({
      onValidate({ addValidationRule }) {
        for (const rule of rules) addValidationRule(rule);
      },
    });
  }
  return plugins;
}
