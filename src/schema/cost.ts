// The numbers of the cost model, published as the IBM cost directives (`@cost`, `@listSize`) that
// Apollo Router, Hive Gateway and Cosmo read from the subgraph SDL. The facade's own limit
// (src/security/cost.ts) reads the same directives back from the schema, so a router and the
// facade price a document alike. Defines no types: the schema files put these on their fields.

/**
 * `@cost(weight:)` of a type whose field costs one upstream call or DNS look-up: ten times any
 * other object (1 by default), Apollo Router's base cost of a mutation. On the type, not the
 * field: Apollo Router lets a field's weight replace its type's, Hive Gateway adds the two.
 */
export const UPSTREAM_CALL_WEIGHT = 10;

/**
 * How many items an omitted `limit` stands for: the default of MAX_PAGE_SIZE. The upstream
 * answers a page of its own default size, which its spec leaves unsaid; a limit above
 * MAX_PAGE_SIZE is refused anyway.
 */
export const ASSUMED_PAGE_SIZE = 100;

/** How many branches or tags a repository is assumed to have: the upstream sends them all. */
export const ASSUMED_REFS = 10;

/**
 * `@listSize` of a paged root field: its slicing argument sizes the list field of the page it
 * returns; optional, so `requireOneSlicingArgument: false` (a router would otherwise refuse a
 * document that omits it), and omitted it counts as `assumedSize`.
 */
export function pageListSize(argument: 'first' | 'limit', sizedField: string, assumedSize: number) {
  return {
    slicingArguments: [argument],
    sizedFields: [sizedField],
    requireOneSlicingArgument: false,
    assumedSize,
  };
}

/** `@listSize` of a list that has no slicing argument. */
export const refsListSize = { assumedSize: ASSUMED_REFS };
