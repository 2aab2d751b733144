import { GraphQLError, type ValidationRule } from 'graphql';
import type { Plugin } from 'graphql-yoga';

/**
 * An operation type without a root (a `subscription`): graphql-js validation passes it, and it
 * would fail in execution, as an internal error.
 */
const knownOperationTypes: ValidationRule = (context) => ({
  OperationDefinition(node) {
    if (context.getSchema().getRootType(node.operation)) return;
    context.reportError(
      new GraphQLError(
        `This API has no ${node.operation} operations (the schema has no ${node.operation} root type)`,
        { nodes: node },
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
