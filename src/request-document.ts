// What several stages read of a request's GraphQL parameters and parsed document: a stage asks
// this module, never another stage.
import { BREAK, type DocumentNode, Kind, parse, visit } from 'graphql';
import type { GraphQLParams } from 'graphql-yoga';

/** Yoga's request parameter for a trusted document's id, in a POST body or a GET URL. */
export const DOCUMENT_ID_PARAM = 'documentId';

/** APQ's `extensions.persistedQuery.sha256Hash` (version 1); trusted documents take it as an id. */
export function persistedQueryHash(params: GraphQLParams): string | undefined {
  const persisted = (params.extensions as { persistedQuery?: unknown } | undefined)
    ?.persistedQuery as { version?: unknown; sha256Hash?: unknown } | undefined;
  return persisted?.version === 1 && typeof persisted.sha256Hash === 'string'
    ? persisted.sha256Hash
    : undefined;
}

const INCREMENTAL = new Set(['defer', 'stream']);
const seen = new WeakMap<DocumentNode, boolean>();

/** `@defer` or `@stream` anywhere in it; kept per document, which Yoga's parse cache reuses. */
export function usesIncrementalDelivery(document: DocumentNode): boolean {
  let found = seen.get(document);
  if (found === undefined) {
    found = false;
    visit(document, {
      [Kind.DIRECTIVE](node) {
        if (!INCREMENTAL.has(node.name.value)) return undefined;
        found = true;
        return BREAK;
      },
    });
    seen.set(document, found);
  }
  return found;
}

/** One operation (fragments aside). */
export function hasOneOperation(document: DocumentNode): boolean {
  let operations = 0;
  for (const definition of document.definitions) {
    if (definition.kind === Kind.OPERATION_DEFINITION && ++operations > 1) return false;
  }
  return true;
}

/** Whether the document defines a subscription. */
export function hasSubscription(document: DocumentNode): boolean {
  return document.definitions.some(
    (definition) =>
      definition.kind === Kind.OPERATION_DEFINITION && definition.operation === 'subscription',
  );
}

/** The names of the operations the trusted documents define. */
export function operationNames(documents: Iterable<string>): Set<string> {
  const names = new Set<string>();
  for (const text of documents) {
    for (const definition of parse(text, { noLocation: true }).definitions) {
      if (definition.kind === Kind.OPERATION_DEFINITION && definition.name)
        names.add(definition.name.value);
    }
  }
  return names;
}
