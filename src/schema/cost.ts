// The numbers of the cost directives: routers and src/security/cost.ts read them back from the
// schema, so both price a document alike (docs/federation.md#cost).

/** `@cost(weight:)` on the type (not the field) of a field that costs an upstream call. */
export const UPSTREAM_CALL_WEIGHT = 10;

/** What an omitted `limit` counts as: MAX_PAGE_SIZE's default (the upstream's is unsaid). */
export const ASSUMED_PAGE_SIZE = 100;

/**
 * `@listSize` of a paged root field whose argument is optional: `requireOneSlicingArgument: false`,
 * or a router refuses a document that omits it.
 */
export function pageListSize(argument: 'first' | 'limit', sizedField: string, assumedSize: number) {
  return {
    slicingArguments: [argument],
    sizedFields: [sizedField],
    requireOneSlicingArgument: false,
    assumedSize,
  };
}

/** `@listSize` of branches and tags: the upstream sends them all. */
export const refsListSize = { assumedSize: 10 };
