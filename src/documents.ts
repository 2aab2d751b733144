// What several stages read of a request's GraphQL parameters and of its parsed document. Kept
// apart from the plugins so that a stage asks this module, never another stage.
import { BREAK, type DocumentNode, Kind, parse, visit } from 'graphql';
import type { GraphQLParams } from 'graphql-yoga';

/** Yoga's request parameter for a document id; POST bodies carry it, GET has it in the URL. */
export const DOCUMENT_ID_PARAM = 'documentId';

/**
 * Apollo's `extensions.persistedQuery.sha256Hash` (version 1), which APQ and urql's and Apollo
 * Client's persisted-query links send; trusted documents accept it as an id too.
 */
export function persistedQueryHash(params: GraphQLParams): string | undefined {
  const persisted = (params.extensions as { persistedQuery?: unknown } | undefined)
    ?.persistedQuery as { version?: unknown; sha256Hash?: unknown } | undefined;
  return persisted?.version === 1 && typeof persisted.sha256Hash === 'string'
    ? persisted.sha256Hash
    : undefined;
}

const INCREMENTAL = new Set(['defer', 'stream']);
const seen = new WeakMap<DocumentNode, boolean>();

/**
 * Whether a document asks for incremental delivery (`@defer` or `@stream` anywhere in it). Parsed
 * documents are cached by Yoga and reused, so the answer is kept per document.
 */
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

/** A document of one operation (fragments aside): the only kind graphql-jit may run here. */
export function hasOneOperation(document: DocumentNode): boolean {
  let operations = 0;
  for (const definition of document.definitions) {
    if (definition.kind === Kind.OPERATION_DEFINITION && ++operations > 1) return false;
  }
  return true;
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
