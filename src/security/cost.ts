// The IBM cost spec as Apollo Router applies it, over the schema's own `@cost` and `@listSize`
// (src/schema/cost.ts), so that a router and the facade price alike (docs/federation.md#cost).
// Not graphql-armor's cost limit: its model is not the spec's.
import {
  DirectiveLocation,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  GraphQLBoolean,
  GraphQLDirective,
  type GraphQLField,
  GraphQLIncludeDirective,
  GraphQLInt,
  GraphQLList,
  type GraphQLNamedType,
  GraphQLNonNull,
  type GraphQLSchema,
  GraphQLSkipDirective,
  GraphQLString,
  getArgumentValues,
  getDirectiveValues,
  getNamedType,
  getNullableType,
  isCompositeType,
  isInterfaceType,
  isIntrospectionType,
  isListType,
  isObjectType,
  Kind,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';

const MUTATION_BASE_COST = 10;

const costDirective = new GraphQLDirective({
  name: 'cost',
  locations: [
    DirectiveLocation.ARGUMENT_DEFINITION,
    DirectiveLocation.ENUM,
    DirectiveLocation.FIELD_DEFINITION,
    DirectiveLocation.INPUT_FIELD_DEFINITION,
    DirectiveLocation.OBJECT,
    DirectiveLocation.SCALAR,
  ],
  args: { weight: { type: new GraphQLNonNull(GraphQLInt) } },
});

const listSizeDirective = new GraphQLDirective({
  name: 'listSize',
  locations: [DirectiveLocation.FIELD_DEFINITION],
  args: {
    assumedSize: { type: GraphQLInt },
    slicingArguments: { type: new GraphQLList(new GraphQLNonNull(GraphQLString)) },
    sizedFields: { type: new GraphQLList(new GraphQLNonNull(GraphQLString)) },
    requireOneSlicingArgument: { type: GraphQLBoolean, defaultValue: true },
  },
});

interface ListSize {
  assumedSize?: number | null;
  slicingArguments?: readonly string[] | null;
  sizedFields?: readonly string[] | null;
}

type Variables = Record<string, unknown>;

// Read once per type and field: reading the directives is most of an estimate's time.
const weights = new WeakMap<GraphQLNamedType, number>();
const listSizes = new WeakMap<GraphQLField<unknown, unknown>, ListSize | null>();

function weightOf(type: GraphQLNamedType): number {
  let weight = weights.get(type);
  if (weight === undefined) {
    const cost = type.astNode && getDirectiveValues(costDirective, type.astNode);
    weight = cost ? (cost.weight as number) : isCompositeType(type) ? 1 : 0;
    weights.set(type, weight);
  }
  return weight;
}

function listSizeOf(field: GraphQLField<unknown, unknown>): ListSize | undefined {
  let listSize = listSizes.get(field);
  if (listSize === undefined) {
    listSize = ((field.astNode && getDirectiveValues(listSizeDirective, field.astNode)) ??
      null) as ListSize | null;
    listSizes.set(field, listSize);
  }
  return listSize ?? undefined;
}

/** Every slicing argument's name in the schema: the arguments a document's cost depends on. */
export function slicingArgumentNames(schema: GraphQLSchema): Set<string> {
  const names = new Set<string>();
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) && !isInterfaceType(type)) continue;
    for (const field of Object.values(type.getFields())) {
      for (const name of listSizeOf(field)?.slicingArguments ?? []) names.add(name);
    }
  }
  return names;
}

interface Walk {
  schema: GraphQLSchema;
  maxSlice: number;
  fragments: ReadonlyMap<string, FragmentDefinitionNode>;
  variables: Variables;
}

/**
 * Throws a GraphQLError when an argument's value cannot be read, as execution would. A slicing
 * argument above `maxSlice` counts as `maxSlice`: its resolver refuses it, naming the bound.
 */
export function estimateCost(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Variables,
  maxSlice = Number.POSITIVE_INFINITY,
): number {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION)
      fragments.set(definition.name.value, definition);
  }
  const root = schema.getRootType(operation.operation);
  if (!root) return 0;
  const base = operation.operation === 'mutation' ? MUTATION_BASE_COST : 0;
  const walk = { schema, maxSlice, fragments, variables };
  return base + selectionCost(operation.selectionSet, root, NONE, walk);
}

/** `sized`: the sizes a parent's `@listSize(sizedFields:)` gives the fields of this selection. */
function selectionCost(
  selectionSet: SelectionSetNode,
  parent: GraphQLNamedType,
  sized: ReadonlyMap<string, number>,
  walk: Walk,
): number {
  const { variables } = walk;
  let cost = 0;
  for (const selection of selectionSet.selections) {
    if (getDirectiveValues(GraphQLSkipDirective, selection, variables)?.if === true) continue;
    if (getDirectiveValues(GraphQLIncludeDirective, selection, variables)?.if === false) continue;
    if (selection.kind === Kind.FIELD) {
      cost += fieldCost(selection, parent, sized, walk);
      continue;
    }
    const fragment =
      selection.kind === Kind.INLINE_FRAGMENT
        ? selection
        : walk.fragments.get(selection.name.value);
    if (!fragment) continue;
    const condition = fragment.typeCondition
      ? walk.schema.getType(fragment.typeCondition.name.value)
      : undefined;
    cost += selectionCost(fragment.selectionSet, condition ?? parent, sized, walk);
  }
  return cost;
}

function fieldCost(
  node: FieldNode,
  parent: GraphQLNamedType,
  sized: ReadonlyMap<string, number>,
  walk: Walk,
): number {
  if (!isObjectType(parent) && !isInterfaceType(parent)) return 0;
  const field = parent.getFields()[node.name.value];
  // __typename, and what validation has already refused.
  if (!field) return 0;
  const type = getNamedType(field.type);
  if (isIntrospectionType(type)) return 0;
  const listSize = listSizeOf(field);
  let size = sized.get(node.name.value) ?? 1;
  let childSizes: ReadonlyMap<string, number> = NONE;
  if (listSize) {
    let sliced: number | undefined;
    if (listSize.slicingArguments?.length) {
      const args = getArgumentValues(field, node, walk.variables);
      for (const name of listSize.slicingArguments) {
        const value = args[name];
        if (typeof value === 'number')
          sliced = Math.max(sliced ?? 0, Math.min(value, walk.maxSlice));
      }
    }
    const length = sliced ?? listSize.assumedSize ?? 1;
    if (listSize.sizedFields?.length) {
      childSizes = new Map(listSize.sizedFields.map((name) => [name, length]));
    } else if (isListType(getNullableType(field.type))) {
      size = length;
    }
  }
  let cost = weightOf(type);
  if (node.selectionSet) cost += selectionCost(node.selectionSet, type, childSizes, walk);
  return size * cost;
}

const NONE: ReadonlyMap<string, number> = new Map();
