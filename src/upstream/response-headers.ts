// The upstream's response headers that the caller is passed back: which, and how they are read.

/**
 * Passed back whatever UPSTREAM_RESPONSE_HEADERS says: the wait a 429 or 503 asks for, the IETF
 * fields and their draft forms, and the `X-RateLimit-*` names most APIs send. Exact names, never a
 * prefix: CORS can expose a header only by its name, and a prefix would pass on whatever an
 * upstream invents under it.
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

/** The built-in names and the operator's (UPSTREAM_RESPONSE_HEADERS), lower-case, each once. */
export function passedBackNames(extra: readonly string[] = []): readonly string[] {
  return [...new Set([...UPSTREAM_LIMIT_HEADERS, ...extra])];
}

/**
 * The headers of `names` an answer carries, by lower-case name (undici's), a repeated one joined
 * as HTTP joins field lines; undefined when it carries none, so a call to an upstream that states
 * no limit keeps nothing.
 */
export function pickHeaders(
  headers: Readonly<Record<string, string | string[] | undefined>>,
  names: readonly string[],
): Readonly<Record<string, string>> | undefined {
  let picked: Record<string, string> | undefined;
  for (const name of names) {
    const value = headers[name];
    if (value === undefined) continue;
    picked ??= {};
    picked[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return picked;
}
