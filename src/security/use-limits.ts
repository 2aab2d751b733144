import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import type { ASTVisitor, GraphQLError, ValidationContext } from 'graphql';
import { NoSchemaIntrospectionCustomRule } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Config } from '../config.js';
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

// Validation rules report (the request answers 400 with every problem found); the token limit
// runs inside the parser, where throwing is the only way out.
const report = [
  (context: ValidationContext | null, error: GraphQLError) =>
    context?.reportError(limitError(error)),
];
const reject = [
  (_context: ValidationContext | null, error: GraphQLError) => {
    throw limitError(error);
  },
];

/**
 * Refuses Apollo Federation's `_service { sdl }`: it discloses the whole schema, descriptions
 * included, exactly as introspection does, so a public edge that turns one off turns off both.
 */
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
 * Depth, tokens, aliases and directives, all checked before execution (the cost, which needs the
 * variables, is use-cost.ts's), so an abusive document costs one parse and one validation and
 * never reaches a resolver or the upstream.
 * Field suggestions ("Did you mean ...?") are hidden in production: they map the schema for
 * anyone even when introspection is off.
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
      // The cost depends on variables: use-cost.ts checks it, with one cost model.
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
