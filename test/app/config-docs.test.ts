import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { docsPath, writtenDocs } from '../../scripts/config-docs.js';

describe('docs/configuration.md', () => {
  it('holds the tables `npm run docs:config` writes from the declarations', () => {
    const committed = readFileSync(docsPath, 'utf8');
    expect(committed).toBe(writtenDocs(committed));
  });

  it('refuses a page without a place for every section', () => {
    expect(() => writtenDocs('# Configuration\n')).toThrow(/no place for server, upstream/);
  });
});
