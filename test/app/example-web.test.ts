import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { generate } from '@graphql-codegen/cli';
import { describe, expect, it } from 'vitest';
import codegenConfig from '../../examples/web/codegen.js';
import { loadConfig } from '../../src/config/load.js';

const ROOT = join(import.meta.dirname, '..', '..');
const GQL = 'examples/web/src/gql';
const MANIFEST = join(ROOT, GQL, 'persisted-documents.json');

describe('the example frontend’s generated files (examples/web/src/gql)', () => {
  it('are what codegen makes of schema.graphql and the operations now', async () => {
    const outputs: Array<{ filename: string; content: string }> = await generate(
      { ...codegenConfig, cwd: ROOT, silent: true },
      false,
    );
    // No file left over from an operation that is gone.
    expect(outputs.map((output) => output.filename).sort()).toEqual(
      readdirSync(join(ROOT, GQL))
        .map((name) => `${GQL}/${name}`)
        .sort(),
    );
    for (const output of outputs) {
      // Run `npm run example:web:codegen` and commit the result when this fails.
      expect(readFileSync(join(ROOT, output.filename), 'utf8'), output.filename).toBe(
        output.content,
      );
    }
  }, 60_000);

  it('hold a manifest the facade accepts as PERSISTED_DOCUMENTS', () => {
    const { documents } = loadConfig({ PERSISTED_DOCUMENTS: MANIFEST }).persistedDocuments;
    expect(
      [...(documents?.values() ?? [])]
        .map((text) => /^(query|mutation|subscription) (\w+)/.exec(text)?.[2])
        .sort(),
    ).toEqual([
      'CreateDomainVerification',
      'DomainDnsCheck',
      'Repositories',
      'RepositoriesConnection',
      'RequestDevServer',
      'VerifyDomain',
      'WatchDomainDns',
    ]);
  });
});
