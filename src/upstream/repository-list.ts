import { WireMismatch } from './wire.js';

// GET /git/v1/repo checked and mapped in one hand-written pass, not zod: it runs for every page
// (docs/performance.md#what-was-tried). Checks the spec's required fields, drops unknown ones.

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

function count(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0)
    fail([field], 'a whole number >= 0', value);
  if (value > GRAPHQL_INT_MAX)
    throw new WireMismatch(
      [field],
      `expected at most ${GRAPHQL_INT_MAX} (GraphQL's Int), got ${value}`,
    );
  return value;
}

// A field's path is built only when it fails: building every one was most of the decoding time.
type MapField = 'branches' | 'tags';

/** A map (absent or null: empty) as a list, in the upstream's order; a missing name is the key. */
function entries<T>(
  value: unknown,
  index: number,
  map: MapField,
  item: (wire: Record<string, unknown>, index: number, map: MapField, key: string) => T,
): T[] {
  if (value == null) return [];
  if (!isObject(value)) fail(['repositories', index, map], 'an object', value);
  const list: T[] = [];
  for (const key in value) {
    const wire = value[key];
    if (!isObject(wire)) fail(['repositories', index, map, key], 'an object', wire);
    list.push(item(wire, index, map, key));
  }
  return list;
}

function branch(wire: Record<string, unknown>, index: number, map: MapField, key: string): Branch {
  const { name, target, default: isDefault } = wire;
  if (typeof isDefault !== 'boolean')
    fail(['repositories', index, map, key, 'default'], 'a boolean', isDefault);
  if (name !== undefined && typeof name !== 'string')
    fail(['repositories', index, map, key, 'name'], 'a string', name);
  if (typeof target !== 'string')
    fail(['repositories', index, map, key, 'target'], 'a string', target);
  return { name: name ?? key, target, isDefault };
}

function tag(wire: Record<string, unknown>, index: number, map: MapField, key: string): Tag {
  const { name, target, message } = wire;
  if (name !== undefined && typeof name !== 'string')
    fail(['repositories', index, map, key, 'name'], 'a string', name);
  if (typeof target !== 'string')
    fail(['repositories', index, map, key, 'target'], 'a string', target);
  if (message != null && typeof message !== 'string')
    fail(['repositories', index, map, key, 'message'], 'a string or null', message);
  return { name: name ?? key, target, message: message ?? null };
}

function repository(wire: unknown, index: number): Repository {
  if (!isObject(wire)) fail(['repositories', index], 'an object', wire);
  const { id, defaultBranch } = wire;
  if (id != null && typeof id !== 'string' && typeof id !== 'number')
    fail(['repositories', index, 'id'], 'a string or a number', id);
  if (defaultBranch != null && typeof defaultBranch !== 'string')
    fail(['repositories', index, 'defaultBranch'], 'a string or null', defaultBranch);
  return {
    // Not in the spec; passed through when present.
    id: id == null ? null : String(id),
    defaultBranch: defaultBranch ?? null,
    branches: entries(wire.branches, index, 'branches', branch),
    tags: entries(wire.tags, index, 'tags', tag),
  };
}

/** Throws WireMismatch naming the first field that breaks the spec. */
export function decodeRepositoryList(json: unknown): RepositoryList {
  if (!isObject(json)) fail([], 'an object', json);
  const list = json.repositories;
  if (!Array.isArray(list)) fail(['repositories'], 'an array', list);
  const total = count(json.total, 'total');
  const offset = count(json.offset, 'offset');
  return { repositories: list.map(repository), total, offset };
}
