import { type GraphQLResolveInfo, Kind, responsePathAsArray, type SelectionSetNode } from 'graphql';
import { formatPath } from '../errors.js';

/** The field's path in the answer as a client writes it: `a`, `repositories`, `x.items[0]`. */
export function fieldPath(info: GraphQLResolveInfo): string {
  return formatPath(responsePathAsArray(info.path));
}

/**
 * The names of the fields selected under the current field, through fragments. Fields under
 * @skip/@include count as selected: the answer stays correct, merely less optimised.
 */
export function selectedFields(info: GraphQLResolveInfo): Set<string> {
  const names = new Set<string>();
  const visit = (set: SelectionSetNode | undefined) => {
    for (const selection of set?.selections ?? []) {
      if (selection.kind === Kind.FIELD) names.add(selection.name.value);
      else if (selection.kind === Kind.INLINE_FRAGMENT) visit(selection.selectionSet);
      else visit(info.fragments[selection.name.value]?.selectionSet);
    }
  };
  for (const node of info.fieldNodes) visit(node.selectionSet);
  return names;
}
