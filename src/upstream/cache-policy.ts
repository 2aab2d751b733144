// How long an upstream answer may be kept, and for whom (RFC 9111):
// docs/caching.md#where-a-fields-policy-comes-from.

/** How long an answer may be kept, in whole seconds, and for whom. maxAge 0: not kept at all. */
export interface CachePolicy {
  /** What the facade and other shared caches may keep it: `s-maxage`, else `max-age`. */
  readonly maxAge: number;
  /** What browsers may keep it, when an `s-maxage` made it differ from `maxAge`. */
  readonly privateMaxAge?: number | undefined;
  readonly scope: 'PUBLIC' | 'PRIVATE';
  /** RFC 5861's windows past `maxAge` (docs/caching.md#stale-answers). */
  readonly staleWhileRevalidate?: number | undefined;
  readonly staleIfError?: number | undefined;
}

/** The operator's stale windows for a route, where the upstream's answer names none. */
export interface StaleDefaults {
  staleWhileRevalidate?: number | undefined;
  staleIfError?: number | undefined;
}

/** How long past its max-age anything kept under `policy` may still serve. */
export const staleWindow = (policy: CachePolicy) =>
  Math.max(policy.staleWhileRevalidate ?? 0, policy.staleIfError ?? 0);

export const privateMaxAge = (policy: CachePolicy) => policy.privateMaxAge ?? policy.maxAge;

/** A policy `elapsedMs` after it was kept: whole seconds left, the private one never below 0. */
export function aged(policy: CachePolicy, elapsedMs: number): CachePolicy {
  const elapsed = Math.max(0, elapsedMs) / 1000;
  const maxAge = Math.floor(policy.maxAge - elapsed);
  if (policy.privateMaxAge === undefined) return { maxAge, scope: policy.scope };
  const left = Math.max(0, Math.floor(policy.privateMaxAge - elapsed));
  return { maxAge, privateMaxAge: left, scope: policy.scope };
}

/** Kept by no one. */
export const NO_STORE: CachePolicy = Object.freeze({ maxAge: 0, scope: 'PRIVATE' });

/** The headers of an upstream answer that decide its policy, as undici gives them. */
export interface FreshnessHeaders {
  'cache-control'?: string | string[] | undefined;
  expires?: string | string[] | undefined;
  date?: string | string[] | undefined;
  age?: string | string[] | undefined;
  vary?: string | string[] | undefined;
}

const join = (value: string | string[] | undefined) =>
  Array.isArray(value) ? value.join(',') : value;

/** A Cache-Control header's directives, lower-cased, each to its value ('' when it has none). */
function directives(header: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const part of header.split(',')) {
    const mark = part.indexOf('=');
    const name = (mark === -1 ? part : part.slice(0, mark)).trim().toLowerCase();
    const value =
      mark === -1
        ? ''
        : part
            .slice(mark + 1)
            .trim()
            .replace(/^"(.*)"$/, '$1');
    // RFC 9111 §4.2.1: of a directive given twice, the first counts.
    if (name && !found.has(name)) found.set(name, value);
  }
  return found;
}

// RFC 9111 section 1.2.2: a delta-seconds past what a cache can hold counts as 2^31.
const MAX_SECONDS = 2 ** 31 - 1;

const seconds = (value: string | undefined): number | undefined =>
  value !== undefined && /^\d+$/.test(value) ? Math.min(Number(value), MAX_SECONDS) : undefined;

/** RFC 9111 section 5.1: of an Age sent as a list (several lines, or one with commas), the first. */
const firstMember = (value: string | string[] | undefined) =>
  (Array.isArray(value) ? value[0] : value)?.split(',', 1)[0]?.trim();

/**
 * The policy an upstream answer declares, or undefined when it declares none. A `Vary` on anything
 * `keyed` does not accept keeps nothing: it would serve callers the answer was not made for.
 * The rules: docs/caching.md#where-a-fields-policy-comes-from.
 */
export function parseCachePolicy(
  headers: FreshnessHeaders,
  now: number = Date.now(),
  keyed: (header: string) => boolean = () => false,
): CachePolicy | undefined {
  const cacheControl = join(headers['cache-control']);
  const expires = join(headers.expires);
  for (const name of join(headers.vary)?.split(',') ?? []) {
    const header = name.trim().toLowerCase();
    if (header === '*' || (header !== '' && !keyed(header))) return NO_STORE;
  }
  const found = cacheControl ? directives(cacheControl) : new Map<string, string>();
  if (found.has('no-store') || found.has('no-cache')) return NO_STORE;
  const scope = found.has('private') ? 'PRIVATE' : 'PUBLIC';
  const shared = seconds(found.get('s-maxage'));
  let lifetime = seconds(found.get('max-age'));
  if (lifetime === undefined && expires !== undefined) {
    const at = Date.parse(expires);
    const date = Date.parse(join(headers.date) ?? '');
    const base = Number.isNaN(date) ? now : date;
    lifetime = Number.isNaN(at)
      ? 0
      : Math.min(MAX_SECONDS, Math.max(0, Math.floor((at - base) / 1000)));
  }
  if (lifetime === undefined && shared === undefined)
    return found.has('private') ? NO_STORE : undefined;
  const age = seconds(firstMember(headers.age)) ?? 0;
  const left = (value: number) => Math.max(0, value - age);
  // Browsers get no lifetime the upstream did not give them; s-maxage says nothing of a private one.
  if (scope === 'PRIVATE' && lifetime === undefined) return NO_STORE;
  const policy: CachePolicy =
    scope === 'PRIVATE' || shared === undefined || shared === lifetime
      ? { maxAge: left(lifetime ?? 0), scope }
      : { maxAge: left(shared), privateMaxAge: left(lifetime ?? 0), scope };
  return withStale(policy, {
    staleWhileRevalidate: seconds(found.get('stale-while-revalidate')),
    staleIfError: seconds(found.get('stale-if-error')),
  });
}

/**
 * The strictest policy of a read's successful attempts (a failed one says nothing of the answer),
 * and whether one of them had none.
 */
export function readsPolicy(
  calls: Iterable<{ outcome: number | string; cachePolicy?: CachePolicy | undefined }>,
): { policy: CachePolicy | undefined; unpoliced: boolean } {
  let policy: CachePolicy | undefined;
  let unpoliced = false;
  for (const call of calls) {
    if (typeof call.outcome !== 'number' || call.outcome < 200 || call.outcome >= 300) continue;
    if (!call.cachePolicy) unpoliced = true;
    else policy = policy ? strictest(policy, call.cachePolicy) : call.cachePolicy;
  }
  return { policy, unpoliced };
}

/** `policy` with the stale windows of `stale` it does not name itself; none on NO_STORE. */
export function withStale(policy: CachePolicy, stale: StaleDefaults | undefined): CachePolicy {
  if (policy === NO_STORE || !stale) return policy;
  const staleWhileRevalidate = policy.staleWhileRevalidate ?? stale.staleWhileRevalidate;
  const staleIfError = policy.staleIfError ?? stale.staleIfError;
  return {
    ...policy,
    ...(staleWhileRevalidate ? { staleWhileRevalidate } : {}),
    ...(staleIfError ? { staleIfError } : {}),
  };
}

/** The strictest of `policies`; undefined when there is none. */
export function strictestOf(policies: Iterable<CachePolicy | undefined>): CachePolicy | undefined {
  let strict: CachePolicy | undefined;
  for (const policy of policies) {
    if (policy) strict = strict ? strictest(strict, policy) : policy;
  }
  return strict;
}

/** The stricter of two policies: the shorter lifetime, private if either is. */
export function strictest(a: CachePolicy, b: CachePolicy): CachePolicy {
  if (a.maxAge === 0 || b.maxAge === 0) return NO_STORE;
  const maxAge = Math.min(a.maxAge, b.maxAge);
  const scope = a.scope === 'PRIVATE' || b.scope === 'PRIVATE' ? 'PRIVATE' : 'PUBLIC';
  // A window one part lacks is a window the whole lacks.
  const least = (x: number | undefined, y: number | undefined) =>
    x && y ? { value: Math.min(x, y) } : undefined;
  const swr = least(a.staleWhileRevalidate, b.staleWhileRevalidate);
  const sie = least(a.staleIfError, b.staleIfError);
  return {
    maxAge,
    ...(a.privateMaxAge === undefined && b.privateMaxAge === undefined
      ? {}
      : { privateMaxAge: Math.min(privateMaxAge(a), privateMaxAge(b)) }),
    scope,
    ...(swr ? { staleWhileRevalidate: swr.value } : {}),
    ...(sie ? { staleIfError: sie.value } : {}),
  };
}
