import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const SRC = resolve(import.meta.dirname, '../../src');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Each source file's relative imports (type-only ones too), as files of src/. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sources(SRC)) {
    const text = readFileSync(file, 'utf8');
    const targets = [...text.matchAll(/\bfrom\s+'(\.{1,2}\/[^']+)\.js'/g)].map((match) =>
      resolve(dirname(file), `${match[1]}.ts`),
    );
    graph.set(file, targets);
  }
  return graph;
}

/** One import cycle, as the files it passes through, or undefined. */
function findCycle(graph: Map<string, string[]>): string[] | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (file: string): string[] | undefined => {
    if (state.get(file) === 'done') return undefined;
    if (state.get(file) === 'open') return [...path.slice(path.indexOf(file)), file];
    state.set(file, 'open');
    path.push(file);
    for (const next of graph.get(file) ?? []) {
      const cycle = visit(next);
      if (cycle) return cycle;
    }
    path.pop();
    state.set(file, 'done');
    return undefined;
  };
  for (const file of graph.keys()) {
    const cycle = visit(file);
    if (cycle) return cycle;
  }
  return undefined;
}

/** Functions (methods and arrow functions too) longer than `limit` lines, as `file:line name (n)`. */
function longFunctions(file: string, text: string, limit: number): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const lineOf = (position: number) => source.getLineAndCharacterOfPosition(position).line;
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const lines = lineOf(node.getEnd()) - lineOf(node.getStart()) + 1;
      const named = ts.isVariableDeclaration(node.parent) ? node.parent.name : node.name;
      if (lines > limit)
        found.push(
          `${relative(SRC, file)}:${lineOf(node.getStart()) + 1} ${named?.getText() ?? '(anonymous)'} (${lines})`,
        );
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** Where state escapes its types: a Symbol stash or a double cast, as `file:line what`. */
function untypedState(file: string, text: string): string[] {
  return text
    .split('\n')
    .flatMap((line, index) =>
      [...line.matchAll(/\bSymbol(?:\.for)?\(|\bas unknown as\b/g)].map(
        ([what]) => `${relative(SRC, file)}:${index + 1} ${what}`,
      ),
    );
}

describe('the layout of src/', () => {
  it('has no function over 80 lines', () => {
    const long = sources(SRC).flatMap((file) =>
      longFunctions(file, readFileSync(file, 'utf8'), 80),
    );
    expect(long).toEqual([]);
  });

  it('finds a long function when there is one', () => {
    const body = Array.from({ length: 81 }, (_, i) => `  const a${i} = ${i};`).join('\n');
    const text = `export function tall() {\n${body}\n}\nconst short = () => 1;\n`;
    expect(longFunctions(join(SRC, 'x.ts'), text, 80)).toEqual(['x.ts:1 tall (83)']);
  });

  it('keeps per-request state typed: no Symbol stash, no double cast', () => {
    const found = sources(SRC).flatMap((file) => untypedState(file, readFileSync(file, 'utf8')));
    expect(found).toEqual([]);
  });

  it('finds a Symbol stash and a double cast when there are', () => {
    const text = "const STATE = Symbol.for('state');\nconst a = b as unknown as C;\n";
    expect(untypedState(join(SRC, 'x.ts'), text)).toEqual([
      'x.ts:1 Symbol.for(',
      'x.ts:2 as unknown as',
    ]);
  });

  it('has no import cycle, type-only imports included', () => {
    const cycle = findCycle(importGraph());
    expect(cycle?.map((file) => relative(SRC, file))).toBeUndefined();
  });

  it('finds a cycle when there is one', () => {
    const graph = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a']],
    ]);
    expect(findCycle(graph)).toEqual(['a', 'b', 'c', 'a']);
  });
});
