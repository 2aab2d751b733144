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

/** The folders of src/ that CONTRIBUTING's layout does not name (`  name/` in its src/ block). */
function missingFromLayout(folders: readonly string[], contributing: string): string[] {
  const block = /```\nsrc\/\n([\s\S]*?)\n(?=\S)/.exec(contributing)?.[1] ?? '';
  const named = new Set([...block.matchAll(/^ {2}([a-z][a-z-]*)\/ /gm)].map((match) => match[1]));
  return folders.filter((folder) => !named.has(folder));
}

// The read path's folders, from the schema down: a folder calls only the ones after it.
const LAYERS = ['schema', 'read', 'cache', 'upstream'];

/** Imports from a layer's file into a layer above it, as `from -> to` (paths in src/). */
function upwardImports(graph: ReadonlyMap<string, readonly string[]>): string[] {
  const layer = (file: string) => LAYERS.indexOf(relative(SRC, file).split('/')[0] ?? '');
  return [...graph].flatMap(([from, targets]) =>
    targets
      .filter((to) => layer(from) >= 0 && layer(to) >= 0 && layer(to) < layer(from))
      .map((to) => `${relative(SRC, from)} -> ${relative(SRC, to)}`),
  );
}

describe('the layout of src/', () => {
  it("names every folder of src/ in CONTRIBUTING's layout", () => {
    const folders = readdirSync(SRC, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
    const contributing = readFileSync(resolve(SRC, '../CONTRIBUTING.md'), 'utf8');
    expect(folders.length).toBeGreaterThan(5);
    expect(missingFromLayout(folders, contributing)).toEqual([]);
  });

  it('finds a folder the layout does not name', () => {
    const text =
      '# x\n\n```\nsrc/\n  app.ts   the app\n  read/    loaders\n```\ntest/\n  cache/ x\n';
    expect(missingFromLayout(['read', 'cache'], text)).toEqual(['cache']);
  });

  it('imports nothing upward along the read path: schema, read, cache, upstream', () => {
    expect(upwardImports(importGraph())).toEqual([]);
  });

  it('finds an upward import when there is one', () => {
    const file = (path: string) => join(SRC, path);
    const graph = new Map([
      [file('schema/a.ts'), [file('read/b.ts'), file('upstream/c.ts')]],
      [file('upstream/c.ts'), [file('read/b.ts'), file('errors.ts')]],
      [file('read/b.ts'), [file('cache/d.ts')]],
      [file('cache/d.ts'), [file('read/e.ts')]],
    ]);
    expect(upwardImports(graph)).toEqual(['upstream/c.ts -> read/b.ts', 'cache/d.ts -> read/e.ts']);
  });

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
