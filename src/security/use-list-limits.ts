import {
  type GraphQLInputType,
  type GraphQLNamedType,
  getNamedType,
  getNullableType,
  getOperationAST,
  isInputObjectType,
  isListType,
  typeFromAST,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { BadUserInputError, type InputIssue } from '../errors.js';

/** A list of items of a type that declares no `extensions.maxItems`. */
export const DEFAULT_MAX_ITEMS = 1000;

/** The longest list of `type` a caller may send: the type's `extensions.maxItems`, or the default. */
export function maxItemsOf(type: GraphQLNamedType): number {
  const declared = type.extensions?.maxItems;
  return typeof declared === 'number' ? declared : DEFAULT_MAX_ITEMS;
}

/**
 * Walks a variable's raw value along its declared type, and reports the first list longer than
 * its item type allows. Only lengths are looked at, never the items' values.
 */
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
    const max = maxItemsOf(getNamedType(nullable));
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
 * Refuses a variable that holds a list longer than its item type allows before the variables
 * are coerced: coercion and the validation rules look at every item, and report an issue per
 * bad item, so a long list must be turned away by its length alone. Lists written in the
 * document are bounded by the token limit and checked by the schema's own rules.
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
