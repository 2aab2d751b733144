import { parseRetryAfter } from '../errors.js';

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

/**
 * What an upstream can add to an answer: at most this many names from a call and in an answer, the
 * listed ones first, each value at most this long (a longer one is not passed back).
 */
export const MAX_PASSED_BACK_NAMES = 64;
export const MAX_PASSED_BACK_VALUE = 1024;

/** The built-in names and UPSTREAM_RESPONSE_HEADERS', each once. */
export function passedBackNames(extra: readonly string[]): readonly string[] {
  return [...new Set([...UPSTREAM_LIMIT_HEADERS, ...extra])];
}

/** Which value of a name is the strictest: the greatest wait, reset or use, the least quota left. */
function orderOf(name: string): 'greatest' | 'least' | undefined {
  if (name === 'retry-after' || name.endsWith('-reset') || name.endsWith('-used'))
    return 'greatest';
  if (name.endsWith('-remaining') || name.endsWith('-limit')) return 'least';
  return undefined;
}

const asNumber = (value: string) => (value.trim() === '' ? Number.NaN : Number(value));

/**
 * Of two values of a header, the stricter; a value that does not read as a number loses, and of a
 * name without an order the first stays.
 */
export function stricter(name: string, kept: string, next: string): string {
  const order = orderOf(name);
  if (!order) return kept;
  const [a, b] = [asNumber(kept), asNumber(next)];
  if (Number.isNaN(b)) return kept;
  if (Number.isNaN(a)) return next;
  return (order === 'greatest' ? b > a : b < a) ? next : kept;
}

/** Retry-After in seconds (an HTTP date read as the seconds until it); other names as they are. */
export const readValue = (name: string, value: string): string | undefined =>
  name === 'retry-after' ? parseRetryAfter(value)?.toString() : value;

/**
 * A name sent on several lines (a list from undici) or as one list: the strictest member when the
 * name has an order and every member reads as a number, else the lines joined as HTTP joins them.
 * Retry-After is never split, an HTTP date holding a comma.
 */
function oneValue(name: string, value: string | string[]): string {
  const joined = Array.isArray(value) ? value.join(', ') : value;
  if (!orderOf(name)) return joined;
  const lines = Array.isArray(value) ? value : [value];
  const members = name === 'retry-after' ? lines : lines.flatMap((line) => line.split(','));
  let strictest: string | undefined;
  for (const member of members) {
    const read = readValue(name, member.trim());
    if (read === undefined || Number.isNaN(asNumber(read))) return joined;
    strictest = strictest === undefined ? read : stricter(name, strictest, read);
  }
  return strictest ?? joined;
}

/**
 * By lower-case name, at most MAX_PASSED_BACK_NAMES, the listed names first, each one value (see
 * oneValue), redacted as error messages are (docs/upstream.md#errors); undefined when none, so a
 * call to an upstream that states no limit keeps nothing.
 */
export function pickHeaders(
  headers: Readonly<Record<string, string | string[] | undefined>>,
  names: ReadonlySet<string>,
  redact: (text: string) => string = (text) => text,
): Readonly<Record<string, string>> | undefined {
  let picked: Record<string, string> | undefined;
  let count = 0;
  const pick = (name: string, value: string | string[]) => {
    const one = oneValue(name, value);
    if (one.length > MAX_PASSED_BACK_VALUE) return;
    picked ??= {};
    picked[name] = redact(one);
    count += 1;
  };
  for (const name of names) {
    const value = headers[name];
    if (value !== undefined && count < MAX_PASSED_BACK_NAMES) pick(name, value);
  }
  for (const [name, value] of Object.entries(headers)) {
    if (count >= MAX_PASSED_BACK_NAMES) break;
    if (value === undefined || names.has(name)) continue;
    if (LIMIT_PREFIXES.some((prefix) => name.startsWith(prefix))) pick(name, value);
  }
  return picked;
}
