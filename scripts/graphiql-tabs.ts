// Writes GraphiQL's tabs (src/http/graphiql-tabs.ts) from the example's operations, in their
// order: src/ cannot import examples/ (dist/ holds src/ alone), so the build carries a copy, and
// a test fails when the copy differs. `npm run example:web:codegen` runs it after codegen.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const operationsPath = fileURLToPath(new URL('../examples/web/src/operations.ts', import.meta.url));
export const tabsPath = fileURLToPath(new URL('../src/http/graphiql-tabs.ts', import.meta.url));

/** Each `graphql(`…`)` document of the file, without the indentation of its place there. */
function documents(source: string): string[] {
  return [...source.matchAll(/graphql\(`([^`]*)`\)/g)].map(([, text = '']) => {
    const lines = text.split('\n').filter((line) => line.trim() !== '');
    const indent = Math.min(...lines.map((line) => line.length - line.trimStart().length));
    return lines.map((line) => line.slice(indent)).join('\n');
  });
}

export function writtenTabs(): string {
  const tabs = documents(readFileSync(operationsPath, 'utf8'));
  if (tabs.length === 0) throw new Error(`${operationsPath}: no graphql(\`…\`) document`);
  const literals = tabs.map((text) => `  \`${text.replace(/[`\\]|\$\{/g, '\\$&')}\`,`);
  return [
    '// Written by `npm run example:web:codegen` from examples/web/src/operations.ts: edit them there.',
    'export const graphiqlTabs = [',
    ...literals,
    '];',
    '',
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(tabsPath, writtenTabs());
  console.log(`wrote ${tabsPath}`);
}
