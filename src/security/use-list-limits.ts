import {
  type GraphQLInputType,
  getNamedType,
  getNullableType,
  getOperationAST,
  isInputObjectType,
  isListType,
  typeFromAST,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { BadUserInputError, type InputIssue } from '../errors.js';

/** For an item type that declares no `extensions.maxItems`. */
const DEFAULT_MAX_ITEMS = 1000;

/** The first list in a variable's raw value longer than its item type's `extensions.maxItems`. */
function findLongList(
  value: unknown,
  type: GraphQLInputType,
  path: string,
): InputIssue | undefined {
  if (value === null || value === undefined) return undefined;
  const nullable = getNullableType(type);
  if (isListType(nullable)) {
    // A single value where a list is expected is coerced to a list of one.
    if (!Array.isArray(value)) return findLongList(value, nullable.ofType, path);
    const declared = getNamedType(nullable).extensions?.maxItems;
    const max = typeof declared === 'number' ? declared : DEFAULT_MAX_ITEMS;
    if (value.length > max) {
      return { path, message: `at most ${max} entries (got ${value.length})` };
    }
    for (const [index, item] of value.entries()) {
      const issue = findLongList(item, nullable.ofType, `${path}[${index}]`);
      if (issue) return issue;
    }
    return undefined;
  }
  if (isInputObjectType(nullable) && typeof value === 'object') {
    const fields = nullable.getFields();
    for (const [key, item] of Object.entries(value)) {
      const field = fields[key];
      const issue = field && findLongList(item, field.type, `${path}.${key}`);
      if (issue) return issue;
    }
  }
  return undefined;
}

/**
 * Refuses a long list in the variables by its length, before coercion reports an issue per item.
 * Lists written in the document are bounded by MAX_TOKENS and the schema's own rules.
 */
export function useListLimits(): Plugin {
  return {
    onExecute({ args, setResultAndStopExecution }) {
      const variables = args.variableValues;
      if (!variables) return;
      const operation = getOperationAST(args.document, args.operationName);
      for (const definition of operation?.variableDefinitions ?? []) {
        const name = definition.variable.name.value;
        const type = typeFromAST(args.schema, definition.type) as GraphQLInputType | undefined;
        const issue = type && findLongList(variables[name], type, name);
        if (issue) {
          setResultAndStopExecution({ errors: [new BadUserInputError([issue])] });
          return;
        }
      }
    },
  };
}
