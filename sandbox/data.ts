import { createHash } from 'node:crypto';

export interface StoredBranch {
  default: boolean;
  name: string;
  target: string;
}

/** `name` and `message` are sometimes absent on purpose: the map key is then the only name. */
export interface StoredTag {
  name?: string;
  target: string;
  message?: string;
}

export interface StoredRepository {
  id: string;
  defaultBranch: string;
  branches: Record<string, StoredBranch>;
  tags: Record<string, StoredTag>;
}

const DEFAULT_BRANCHES = ['main', 'master', 'trunk', 'develop'] as const;
const OTHER_BRANCHES = [
  'develop',
  'staging',
  'feature/login',
  'feature/search',
  'fix/typo',
  'release/1.x',
  'renovate/deps',
  'docs/readme',
] as const;

function digest(seed: string, algorithm: 'sha1' | 'sha256' = 'sha256'): Buffer {
  return createHash(algorithm).update(seed).digest();
}

/** A git-like 40-hex object id, stable for the same account, repository and ref. */
function target(seed: string): string {
  return digest(seed, 'sha1').toString('hex');
}

function byte(bytes: Buffer, index: number): number {
  return bytes[index % bytes.length] ?? 0;
}

/**
 * Everything derives from a hash of (account, index), so a token always sees the same list and two
 * tokens see different ones, without storing anything.
 */
export function seedRepository(accountId: string, index: number): StoredRepository {
  const seed = `${accountId}/${index}`;
  const bytes = digest(seed);
  const id = `repo-${bytes.toString('hex').slice(0, 12)}`;
  const defaultBranch = DEFAULT_BRANCHES[byte(bytes, 0) % DEFAULT_BRANCHES.length] ?? 'main';

  const branches: Record<string, StoredBranch> = {
    [defaultBranch]: {
      default: true,
      name: defaultBranch,
      target: target(`${seed}/${defaultBranch}`),
    },
  };
  const extraBranches = byte(bytes, 1) % 4;
  for (let i = 0; Object.keys(branches).length < extraBranches + 1 && i < 16; i++) {
    const name = OTHER_BRANCHES[(byte(bytes, 2) + i * 3) % OTHER_BRANCHES.length] ?? 'develop';
    if (branches[name]) continue;
    branches[name] = { default: false, name, target: target(`${seed}/${name}`) };
  }

  // Every 7th repository has a tag without its inner name so clients must fall back to the key.
  const nameless = index % 7 === 6;
  const tagCount = nameless ? 1 + (byte(bytes, 3) % 3) : byte(bytes, 3) % 4;
  const tags: Record<string, StoredTag> = {};
  const major = byte(bytes, 4) % 3;
  for (let i = 0; i < tagCount; i++) {
    const name = `v${major}.${i}.${byte(bytes, 5 + i) % 10}`;
    const tag: StoredTag = { name, target: target(`${seed}/tags/${name}`) };
    if ((byte(bytes, 8 + i) & 3) !== 0) tag.message = `Release ${name}`;
    if (nameless && i === 0) delete tag.name;
    tags[name] = tag;
  }

  return { id, defaultBranch, branches, tags };
}

export function seedRepositories(accountId: string, count: number): StoredRepository[] {
  return Array.from({ length: count }, (_, index) => seedRepository(accountId, index));
}
