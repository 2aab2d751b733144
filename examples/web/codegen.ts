import type { CodegenConfig } from '@graphql-codegen/cli';
import { addTypenameSelectionDocumentTransform } from '@graphql-codegen/client-preset';

// Paths are relative to the repository root, where `npm run example:web:codegen` runs.
const config: CodegenConfig = {
  schema: 'schema.graphql',
  documents: ['examples/web/src/**/*.ts', '!examples/web/src/gql/**'],
  ignoreNoDocuments: false,
  generates: {
    'examples/web/src/gql/': {
      preset: 'client',
      presetConfig: {
        // persisted-documents.json: SHA-256 of each document -> the document, and the hash in
        // each typed document's __meta__ for urql's persistedExchange to send.
        persistedDocuments: true,
        fragmentMasking: false,
      },
      config: { useTypeImports: true, enumsAsTypes: true },
      // urql's document cache learns from __typename which answers a mutation makes stale; the
      // facade runs the manifest's text, so it must be there already.
      documentTransforms: [addTypenameSelectionDocumentTransform],
    },
  },
};

export default config;
