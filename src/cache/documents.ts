// What the facade keeps per document text across requests (Yoga's parsed documents, the errors of
// those that fail to parse, their validation results, graphql-jit's compiled queries), within one
// bound in bytes: what one document holds is its sender's choice (a few kilobytes of unknown
// fields hold hundreds of times their size in tree and errors), so a bound by count bounds nothing
// (docs/caching.md#bounds).
import type { JITCache } from '@envelop/graphql-jit';
import type { DocumentNode, GraphQLError, GraphQLSchema, ValidationRule } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { LRUCache } from 'lru-cache';
import {
  LRU_ENTRY_BYTES,
  MAP_ENTRY_BYTES,
  SLICE_BYTES,
  SLICE_MIN_LENGTH,
  SLOT,
  stringBytes,
} from './heap.js';

type Compiled = Parameters<JITCache['set']>[1];

interface Validated {
  readonly schema: GraphQLSchema;
  readonly rules: readonly string[];
  readonly errors: readonly GraphQLError[];
  readonly bytes: number;
}

/**
 * One document text and what was learnt of it. lru-cache sizes a value only when it is new: what
 * is learnt later is set as a new record.
 */
interface Entry {
  readonly key: string;
  readonly document: DocumentNode | undefined;
  readonly parseError: unknown;
  /** The text, the tree or the error, the record. */
  readonly bytes: number;
  readonly validated?: Validated | undefined;
  readonly compiled?: { readonly query: Compiled; readonly bytes: number } | undefined;
}

// The record, its slots in the WeakMap from the document and envelop's from the document to its
// text, and what the pipeline's own plugins keep per document (a flag, a cache hint, its costs).
const ENTRY_BYTES = LRU_ENTRY_BYTES + 64 + 2 * MAP_ENTRY_BYTES + 512;
// A GraphQLError, its captured stack trace included (V8 keeps the frames until it is formatted).
const ERROR_BYTES = 640;
// graphql-jit's compiled query: the generated function, its code and the resolve infos of each
// field, a few kilobytes and a share of its document's tree. Calibrated by bench/documents.ts.
const COMPILED_BYTES = 4096;
const COMPILED_PER_TREE_BYTE = 0.25;

const arrayBytes = (length: number) => (length === 0 ? 16 : 16 + SLOT * length);

/**
 * A string of a parsed tree: one character is V8's shared one, a longer slice of the document
 * (SLICE_MIN_LENGTH characters or more) a view of its text, a shorter one a copy.
 */
function sliceBytes(text: string): number {
  if (text.length <= 1) return 0;
  return text.length >= SLICE_MIN_LENGTH ? SLICE_BYTES : stringBytes(text);
}

/**
 * What a parsed tree holds beyond its text: every node, token (linked to its neighbours, so all of
 * them stay) and location once, `text` (the key) left out.
 */
export function treeBytes(root: object, text: string): number {
  const seen = new Set<object>();
  const stack: object[] = [root];
  let bytes = 0;
  const visit = (value: unknown) => {
    if (typeof value === 'string') {
      if (value !== text) bytes += sliceBytes(value);
    } else if (typeof value === 'number') {
      if (!Number.isInteger(value)) bytes += 16;
    } else if (typeof value === 'object' && value !== null && !seen.has(value)) stack.push(value);
  };
  for (let value = stack.pop(); value !== undefined; value = stack.pop()) {
    if (seen.has(value)) continue;
    seen.add(value);
    if (Array.isArray(value)) {
      bytes += arrayBytes(value.length);
      for (const item of value) visit(item);
      continue;
    }
    bytes += 24;
    for (const key in value) {
      bytes += SLOT;
      visit((value as Record<string, unknown>)[key]);
    }
  }
  return bytes;
}

/** A GraphQL error as graphql-js makes it; the nodes and source it names are the document's. */
export function errorBytes(error: unknown): number {
  if (!(error instanceof Error)) return ERROR_BYTES;
  const { message, locations, positions, path, extensions } = error as Partial<GraphQLError>;
  let bytes = ERROR_BYTES + stringBytes(message ?? '');
  if (locations) bytes += arrayBytes(locations.length) + 40 * locations.length;
  if (positions) bytes += arrayBytes(positions.length);
  if (path) bytes += arrayBytes(path.length) + 32 * path.length;
  if (extensions) bytes += treeBytes(extensions, '');
  return bytes;
}

/**
 * The operations' names as copies, not views of the text: a run keeps one of each (as a key of
 * the compiled query and the pipeline's records), and some V8 lines copy a long one
 * (docs/performance.md#memory).
 */
function operationNameCopies(document: DocumentNode): number {
  let bytes = 0;
  for (const definition of document.definitions) {
    const name = definition.kind === 'OperationDefinition' ? definition.name?.value : undefined;
    if (name && name.length >= SLICE_MIN_LENGTH) bytes += stringBytes(name);
  }
  return bytes;
}

const entryBytes = (entry: Entry) =>
  entry.bytes + (entry.validated?.bytes ?? 0) + (entry.compiled?.bytes ?? 0);

const sameRules = (rules: readonly ValidationRule[], names: readonly string[]) =>
  rules.length === names.length && rules.every((rule, i) => rule.name === names[i]);

export interface DocumentCaches {
  /** Yoga's `parserAndValidationCache`: its own validation cache is off, `plugin` keeps it. */
  readonly yoga: {
    documentCache: {
      get(key: string): DocumentNode | undefined;
      set(key: string, value: DocumentNode): void;
    };
    errorCache: { get(key: string): unknown; set(key: string, value: unknown): void };
    validationCache: false;
  };
  /** Keeps each document's validation result with it, for the rules and schema it ran with. */
  readonly plugin: Plugin;
  /** graphql-jit's cache by document text; its own, by document, lives as long as the document. */
  readonly compiled: JITCache;
  /** What is kept, as counted against the bound. */
  bytes(): number;
  entries(): number;
}

/** The document caches of one app, within `maxBytes` of heap (0: nothing kept). */
export function createDocumentCaches(maxBytes: number): DocumentCaches {
  const entries = new LRUCache<string, Entry>({
    maxSize: Math.max(1, maxBytes),
    sizeCalculation: entryBytes,
  });
  // The record of a document, whose validation Yoga asks by the document alone.
  const byDocument = new WeakMap<DocumentNode, Entry>();
  const keep = (entry: Entry) => {
    if (maxBytes === 0) return;
    entries.set(entry.key, entry);
    if (entry.document) byDocument.set(entry.document, entry);
  };
  const base = (key: string, tree: object | undefined) =>
    ENTRY_BYTES + stringBytes(key) + (tree ? treeBytes(tree, key) : 0);

  return {
    yoga: {
      documentCache: {
        get: (key) => entries.get(key)?.document,
        set(key, document) {
          keep({ key, document, parseError: undefined, bytes: base(key, document) });
        },
      },
      errorCache: {
        get: (key) => entries.get(key)?.parseError,
        set(key, parseError) {
          const bytes = base(key, undefined) + errorBytes(parseError);
          keep({ key, document: undefined, parseError, bytes });
        },
      },
      validationCache: false,
    },
    plugin: {
      onValidate({ params: { schema, documentAST, rules = [] }, setResult }) {
        const entry = byDocument.get(documentAST);
        if (!entry) return;
        const known = entry.validated;
        if (known && known.schema === schema && sameRules(rules, known.rules)) {
          setResult(known.errors);
          return;
        }
        const names = rules.map((rule: ValidationRule) => rule.name);
        return ({ result }) => {
          const errors = result as readonly GraphQLError[];
          const bytes = arrayBytes(errors.length) + errors.reduce((n, e) => n + errorBytes(e), 0);
          // A document pushed out meanwhile is kept again, as the most recent.
          keep({ ...entry, validated: { schema, rules: names, errors, bytes } });
        };
      },
    },
    compiled: {
      get: (key) => entries.get(key)?.compiled?.query,
      set(key, query) {
        const entry = entries.peek(key);
        if (!entry?.document) return;
        const bytes =
          COMPILED_BYTES +
          Math.ceil(COMPILED_PER_TREE_BYTE * entry.bytes) +
          operationNameCopies(entry.document);
        keep({ ...entry, compiled: { query, bytes } });
      },
    },
    bytes: () => entries.calculatedSize,
    entries: () => entries.size,
  };
}
