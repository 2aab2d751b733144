// The upstream's response headers that the caller is passed back: which, and how they are read.

/**
 * Passed back whatever UPSTREAM_RESPONSE_HEADERS says: the wait a 429 or 503 asks for, and the
 * IETF fields with their draft forms. Besides these names, every `RateLimit-*` and `X-RateLimit-*`
 * name passes (the contract's default; `isPassedBack`), exposed to CORS by name on each answer.
 */
export const UPSTREAM_LIMIT_HEADERS: readonly string[] = [
  'retry-after',
  'ratelimit',
  'ratelimit-policy',
  'ratelimit-limit',
  'ratelimit-remaining',
  'ratelimit-reset',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
];

const LIMIT_PREFIXES = ['ratelimit-', 'x-ratelimit-'];

/** The built-in names and the operator's (UPSTREAM_RESPONSE_HEADERS), lower-case, each once. */
export function passedBackNames(extra: readonly string[] = []): readonly string[] {
  return [...new Set([...UPSTREAM_LIMIT_HEADERS, ...extra])];
}

/**
 * The headers an answer carries that pass back, by lower-case name (undici's): those of `names`
 * and any `RateLimit-*` or `X-RateLimit-*`; a repeated one joined as HTTP joins field lines.
 * Undefined when it carries none, so a call to an upstream that states no limit keeps nothing.
 */
export function pickHeaders(
  headers: Readonly<Record<string, string | string[] | undefined>>,
  names: ReadonlySet<string>,
): Readonly<Record<string, string>> | undefined {
  let picked: Record<string, string> | undefined;
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    if (!names.has(name) && !LIMIT_PREFIXES.some((prefix) => name.startsWith(prefix))) continue;
    picked ??= {};
    picked[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return picked;
}
