import { usePersistedOperations } from '@graphql-yoga/plugin-persisted-operations';
import type { GraphQLParams, Plugin } from 'graphql-yoga';
import { FacadeError, persistedQueryNotFound } from '../errors.js';
import { DOCUMENT_ID_PARAM, persistedQueryHash } from '../request-document.js';

export interface TrustedDocumentsOptions {
  /** id -> document text: @graphql-codegen/client-preset's persisted-documents.json. */
  documents: ReadonlyMap<string, string>;
  /** Refuse every document sent as text (PERSISTED_DOCUMENTS_ONLY). */
  only: boolean;
}

/** Yoga's `documentId` (body or query string), else Apollo's `persistedQuery.sha256Hash`. */
export function documentIdOf(params: GraphQLParams, request: Request): string | undefined {
  const fromBody = (params as { documentId?: unknown }).documentId;
  if (typeof fromBody === 'string') return fromBody;
  if (request.method === 'GET') {
    const fromUrl = new URL(request.url, 'http://localhost').searchParams.get(DOCUMENT_ID_PARAM);
    if (fromUrl) return fromUrl;
  }
  return persistedQueryHash(params);
}

// The codegen preset writes `sha256:<digest>`; Apollo Client sends the bare digest.
const SHA256_ID = /^(?:sha256:)?([0-9a-f]{64})$/i;

/** By its id as written, or a SHA-256 id in either form and either case. */
function createDocumentLookup(
  documents: ReadonlyMap<string, string>,
): (id: string) => string | undefined {
  const bySha256 = new Map<string, string>();
  for (const [id, document] of documents) {
    const digest = SHA256_ID.exec(id)?.[1];
    if (digest) bySha256.set(digest.toLowerCase(), document);
  }
  return (id) => {
    const digest = SHA256_ID.exec(id)?.[1];
    return digest ? bySha256.get(digest.toLowerCase()) : documents.get(id);
  };
}

/** Without Apollo's extension, so that APQ leaves a trusted document alone. */
function withoutPersistedQuery(params: GraphQLParams): GraphQLParams {
  const extensions = params.extensions as Record<string, unknown> | undefined;
  if (!extensions || !('persistedQuery' in extensions)) return params;
  const { persistedQuery: _, ...rest } = extensions;
  return { ...params, extensions: rest };
}

const onlyTrusted = () =>
  new FacadeError(
    'PERSISTED_QUERY_ONLY',
    `Only trusted documents run here: send a known document's id as ${DOCUMENT_ID_PARAM} or extensions.persistedQuery.sha256Hash, without the document's text`,
    { http: { status: 400 } },
  );

/**
 * A request that names a manifest id runs that document; with `only`, nothing else runs. Without
 * it, any other request passes on (docs/configuration.md#persisted-documents).
 */
export function useTrustedDocuments({ documents, only }: TrustedDocumentsOptions): Plugin {
  const find = createDocumentLookup(documents);
  const inner = usePersistedOperations({
    allowArbitraryOperations: !only,
    extractPersistedOperationId: (params, request) => documentIdOf(params, request) ?? null,
    getPersistedOperation: (id) => find(id) ?? null,
    customErrors: {
      notFound: persistedQueryNotFound,
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
        const hash = persistedQueryHash(params);
        const named = explicit || inUrl || (hash !== undefined && find(hash) !== undefined);
        if (!named) return;
      }
      // APQ runs next: it would check a `sha256:` id as a digest and store the document again.
      return onParams({
        ...payload,
        setParams: (params) => payload.setParams(withoutPersistedQuery(params)),
      });
    },
  };
}
