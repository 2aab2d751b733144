import { usePersistedOperations } from '@graphql-yoga/plugin-persisted-operations';
import type { GraphQLParams, Plugin } from 'graphql-yoga';
import { FacadeError } from '../../errors.js';

/** Yoga's request parameter for a document id; POST bodies carry it, GET has it in the URL. */
export const DOCUMENT_ID_PARAM = 'documentId';

export interface TrustedDocumentsOptions {
  /** id -> document text, as @graphql-codegen/client-preset's persisted-documents.json has it. */
  documents: ReadonlyMap<string, string>;
  /** Refuse every document sent as text (PERSISTED_DOCUMENTS_ONLY). */
  only: boolean;
}

/**
 * The id a request names: Yoga's `documentId` (body or query string), else Apollo's
 * `extensions.persistedQuery.sha256Hash`, which urql's and Apollo Client's persisted-query links
 * send. Undefined when the request names none.
 */
export function documentIdOf(params: GraphQLParams, request: Request): string | undefined {
  const fromBody = (params as { documentId?: unknown }).documentId;
  if (typeof fromBody === 'string') return fromBody;
  if (request.method === 'GET') {
    const fromUrl = new URL(request.url, 'http://localhost').searchParams.get(DOCUMENT_ID_PARAM);
    if (fromUrl) return fromUrl;
  }
  return apqHashOf(params);
}

function apqHashOf(params: GraphQLParams): string | undefined {
  const persisted = (params.extensions as { persistedQuery?: unknown } | undefined)
    ?.persistedQuery as { version?: unknown; sha256Hash?: unknown } | undefined;
  return persisted?.version === 1 && typeof persisted.sha256Hash === 'string'
    ? persisted.sha256Hash
    : undefined;
}

// 200, as Apollo's protocol has it: clients read the code from the body and resend the document.
const notFound = () =>
  new FacadeError('PERSISTED_QUERY_NOT_FOUND', 'PersistedQueryNotFound', {
    http: { status: 200 },
  });

const onlyTrusted = () =>
  new FacadeError(
    'PERSISTED_QUERY_ONLY',
    `Only trusted documents run here: send a known document's id as ${DOCUMENT_ID_PARAM} or extensions.persistedQuery.sha256Hash, without the document's text`,
    { http: { status: 400 } },
  );

/**
 * Trusted documents: a request that names a manifest id runs that document. With `only`, nothing
 * else runs: a document sent as text is PERSISTED_QUERY_ONLY and an unknown id
 * PERSISTED_QUERY_NOT_FOUND, both before parsing, so no caller-written query reaches a resolver.
 * Without `only`, requests that name no manifest document pass on untouched: a document sent as
 * text runs as usual, and an APQ hash that is not in the manifest is APQ's to serve.
 */
export function useTrustedDocuments({ documents, only }: TrustedDocumentsOptions): Plugin {
  const inner = usePersistedOperations({
    allowArbitraryOperations: !only,
    extractPersistedOperationId: (params, request) => documentIdOf(params, request) ?? null,
    getPersistedOperation: (id) => documents.get(id) ?? null,
    customErrors: {
      notFound,
      persistedQueryOnly: onlyTrusted,
      keyNotFound: onlyTrusted,
    },
  }) as Plugin;
  const onParams = inner.onParams;
  if (!onParams) throw new Error('usePersistedOperations has no onParams hook');
  return {
    ...inner,
    onParams(payload) {
      if (!only) {
        const { params, request } = payload;
        const explicit = typeof (params as { documentId?: unknown }).documentId === 'string';
        const inUrl =
          request.method === 'GET' &&
          new URL(request.url, 'http://localhost').searchParams.has(DOCUMENT_ID_PARAM);
        const hash = apqHashOf(params);
        const named = explicit || inUrl || (hash !== undefined && documents.has(hash));
        if (!named) return;
      }
      return onParams(payload);
    },
  };
}
