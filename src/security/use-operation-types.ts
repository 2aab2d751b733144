import { GraphQLError, type ValidationRule } from 'graphql';
import type { Plugin } from 'graphql-yoga';

/**
 * An operation whose type the schema has no root for (a `subscription` here) is invalid, which
 * graphql-js's validation does not check: it would fail only in execution, as an internal error
 * with a stack in the log. Refused at validation instead, as GRAPHQL_VALIDATION_FAILED.
 */
const knownOperationTypes: ValidationRule = (context) => ({
  OperationDefinition(node) {
    if (context.getSchema().getRootType(node.operation)) return;
    context.reportError(
      new GraphQLError(
        `This API has no ${node.operation} operations (the schema has no ${node.operation} root type)`,
        {
          nodes: node,
        },
      ),
    );
  },
});

export function useOperationTypes(): Plugin {
  return {
    onValidate({ addValidationRule }) {
      addValidationRule(knownOperationTypes);
    },
  };
}
