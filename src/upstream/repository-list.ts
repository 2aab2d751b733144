import { WireMismatch } from './wire.js';

// GET /git/v1/repo, checked and turned into the facade's shape in one pass: the maps of branches
// and tags become lists in the upstream's order, and a missing inner name is the map key.
//
// Written by hand rather than as a zod schema like the other answers: this runs for every page,
// so it must stay one pass that checks and maps together (docs/performance.md has the figures).
// The rules are the spec's, as for the zod schemas: fields it requires are checked, fields it
// does not show are dropped.

export interface Branch {
  name: string;
  target: string;
  isDefault: boolean;
}
export interface Tag {
  name: string;
  target: string;
  message: string | null;
}
export interface Repository {
  id: string | null;
  defaultBranch: string | null;
  branches: Branch[];
  tags: Tag[];
}
export interface RepositoryList {
  repositories: Repository[];
  total: number;
  offset: number;
}

type Path = ReadonlyArray<string | number>;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function fail(path: Path, expected: string, value: unknown): never {
  const got = value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value;
  throw new WireMismatch(path, `expected ${expected}, got ${got}`);
}

// GraphQL's Int is 32-bit: a larger count (valid int64 for the spec) cannot be answered as one.
const GRAPHQL_INT_MAX = 2_147_483_647;

function count(value: unknown, path: Path): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0)
    fail(path, 'a whole number >= 0', value);
  if (value > GRAPHQL_INT_MAX)
    throw new WireMismatch(
      path,
      `expected at most ${GRAPHQL_INT_MAX} (GraphQL's Int), got ${value}`,
    );
  return value;
}

function optionalString(value: unknown, path: Path): string | undefined {
  if (value === undefined || typeof value === 'string') return value;
  return fail(path, 'a string', value);
}

function nullableString(value: unknown, path: Path): string | null {
  if (value == null) return null;
  if (typeof value === 'string') return value;
  return fail(path, 'a string or null', value);
}

function string(value: unknown, path: Path): string {
  if (typeof value === 'string') return value;
  return fail(path, 'a string', value);
}

/** A map of the upstream's (absent or null: empty) into a list, in its order. */
function entries<T>(
  map: unknown,
  path: Path,
  item: (value: Record<string, unknown>, key: string, path: Path) => T,
): T[] {
  if (map == null) return [];
  if (!isObject(map)) fail(path, 'an object', map);
  const list: T[] = [];
  for (const key in map) {
    const value = map[key];
    if (!isObject(value)) fail([...path, key], 'an object', value);
    list.push(item(value, key, [...path, key]));
  }
  return list;
}

function branch(wire: Record<string, unknown>, key: string, path: Path): Branch {
  if (typeof wire.default !== 'boolean') fail([...path, 'default'], 'a boolean', wire.default);
  return {
    name: optionalString(wire.name, [...path, 'name']) ?? key,
    target: string(wire.target, [...path, 'target']),
    isDefault: wire.default,
  };
}

function tag(wire: Record<string, unknown>, key: string, path: Path): Tag {
  return {
    name: optionalString(wire.name, [...path, 'name']) ?? key,
    target: string(wire.target, [...path, 'target']),
    message: nullableString(wire.message, [...path, 'message']),
  };
}

function repository(wire: unknown, path: Path): Repository {
  if (!isObject(wire)) fail(path, 'an object', wire);
  const id = wire.id;
  if (id != null && typeof id !== 'string' && typeof id !== 'number')
    fail([...path, 'id'], 'a string or a number', id);
  return {
    // Not in the spec; passed through when present.
    id: id == null ? null : String(id),
    defaultBranch: nullableString(wire.defaultBranch, [...path, 'defaultBranch']),
    branches: entries(wire.branches, [...path, 'branches'], branch),
    tags: entries(wire.tags, [...path, 'tags'], tag),
  };
}

/** Throws WireMismatch naming the first field that breaks the spec. */
export function decodeRepositoryList(json: unknown): RepositoryList {
  if (!isObject(json)) fail([], 'an object', json);
  const list = json.repositories;
  if (!Array.isArray(list)) fail(['repositories'], 'an array', list);
  const total = count(json.total, ['total']);
  const offset = count(json.offset, ['offset']);
  return {
    repositories: list.map((wire, index) => repository(wire, ['repositories', index])),
    total,
    offset,
  };
}
