/**
 * Passed back whatever UPSTREAM_RESPONSE_HEADERS says, with every `RateLimit-*` and
 * `X-RateLimit-*` name (docs/upstream.md#passed-back-to-the-caller).
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

/** The built-in names and UPSTREAM_RESPONSE_HEADERS', each once. */
export function passedBackNames(extra: readonly string[] = []): readonly string[] {
  return [...new Set([...UPSTREAM_LIMIT_HEADERS, ...extra])];
}

/**
 * By lower-case name, a repeated one joined as HTTP joins field lines, redacted as error messages
 * are (docs/upstream.md#errors); undefined when none, so a call to an upstream that states no
 * limit keeps nothing.
 */
export function pickHeaders(
  headers: Readonly<Record<string, string | string[] | undefined>>,
  names: ReadonlySet<string>,
  redact: (text: string) => string = (text) => text,
): Readonly<Record<string, string>> | undefined {
  let picked: Record<string, string> | undefined;
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    if (!names.has(name) && !LIMIT_PREFIXES.some((prefix) => name.startsWith(prefix))) continue;
    picked ??= {};
    picked[name] = redact(Array.isArray(value) ? value.join(', ') : value);
  }
  return picked;
}
