// Generators of valid and hostile argument values for the property suite, and the contract's rules
// for them written out independently of src/, so a property compares the facade with the contract
// rather than with itself.
import fc from 'fast-check';
import { toASCII } from 'tr46';

export const INT32_MIN = -(2 ** 31);
export const INT32_MAX = 2 ** 31 - 1;

/** What a value a client sent is, by the contract: its rule holds, it breaks the rule, or the contract leaves it open. */
export type Verdict = 'valid' | 'invalid' | 'either';

/** One argument value the contract refuses, and the path a client would write for it. */
export interface Issue {
  path: string;
  /** `invalid`: the contract's own rule (BAD_USER_INPUT naming the path); `coercion`: not a value of the GraphQL type at all. */
  kind: 'invalid' | 'coercion' | 'either';
}

// Generated strings never contain what the suite looks for as a leak in an answer (an answer may
// echo the caller's own value in a validation message, which is not a leak).
const LEAK_LOOKALIKE = /src|node_modules|\.ts|originalError|stack|\bat\b|:\d+:\d+/i;
const clean = (value: string) => !LEAK_LOOKALIKE.test(value);

/** Any text: ASCII, every Unicode plane, graphemes, controls, and very long strings. */
export const anyText: fc.Arbitrary<string> = fc
  .oneof(
    { weight: 3, arbitrary: fc.string({ maxLength: 20 }) },
    { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }) },
    { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 10 }) },
    {
      weight: 1,
      arbitrary: fc.constantFrom('', ' ', '\t\n', '\u0000', '\u202e', '😀', 'a\u0301', '\ufeff'),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.constantFrom('a', 'é', '💥', '/', '%', ' '), fc.constantFrom(64, 254, 10_000))
        .map(([unit, times]) => unit.repeat(times)),
    },
  )
  .filter(clean);

/** Values of a GraphQL type other than Int: floats, strings, booleans, lists, objects. */
export const notAnInt: fc.Arbitrary<unknown> = fc.oneof(
  fc.double({ noNaN: true, noDefaultInfinity: true }).filter((n) => !Number.isInteger(n)),
  fc.constantFrom('10', 'ten', '', true, [1], { n: 1 }),
);

/** Ints around the given bounds, the int32 edges, and past them (not an Int at all). */
export const anyInt = (...bounds: number[]): fc.Arbitrary<number> =>
  fc.oneof(
    fc.integer({ min: 0, max: 40 }),
    fc.integer(),
    fc.constantFrom(
      0,
      -1,
      INT32_MAX,
      INT32_MIN,
      INT32_MAX + 1,
      INT32_MIN - 1,
      2 ** 40,
      Number.MAX_SAFE_INTEGER,
      -Number.MAX_SAFE_INTEGER,
      1e21,
    ),
    ...bounds.map((bound) => fc.integer({ min: bound - 2, max: bound + 2 })),
  );

/** An optional Int argument checked against min and max: null and absent are as omitted. */
export function intIssue(value: unknown, path: string, min?: number, max?: number): Issue[] {
  if (value === undefined || value === null) return [];
  if (
    typeof value !== 'number' ||
    !Number.isInteger(value) ||
    value < INT32_MIN ||
    value > INT32_MAX
  )
    return [{ path, kind: 'coercion' }];
  if ((min !== undefined && value < min) || (max !== undefined && value > max))
    return [{ path, kind: 'invalid' }];
  return [];
}

// ---- domains ----

const shortLabel = fc.stringMatching(/^[a-z0-9](?:[a-z0-9-]{0,8}[a-z0-9])?$/);
const dnsName = fc
  .array(
    fc.oneof(
      { weight: 6, arbitrary: shortLabel },
      { weight: 1, arbitrary: fc.integer({ min: 61, max: 65 }).map((n) => 'a'.repeat(n)) },
    ),
    { minLength: 1, maxLength: 4 },
  )
  .map((labels) => labels.join('.'));
/** A name of exactly `total` characters, around the 253 limit. */
const nearLimit = fc
  .integer({ min: 250, max: 256 })
  .map((total) =>
    `${'a'.repeat(62)}.${'b'.repeat(62)}.${'c'.repeat(62)}.`.padEnd(total - 4, 'd').concat('.com'),
  );
const decorated = fc
  .tuple(dnsName, fc.constantFrom('', ' ', '\t', '\n '), fc.boolean(), fc.boolean())
  .map(([name, space, upper, dot]) => {
    const cased = upper ? name.toUpperCase() : name;
    return `${space}${cased}${dot ? '.' : ''}${space}`;
  });
const ipLiteral = fc.constantFrom(
  '127.0.0.1',
  '0x7f.1',
  '0177.0.0.1',
  '127.1',
  '2130706433',
  '0x7f000001',
  '0x7f.0.0.1',
  '169.254.169.254',
  '0.0.0.0',
  '1.2',
  '[::1]',
  '::1',
  '[::ffff:127.0.0.1]',
  'example.123',
  'a.0x10',
);
const urlSyntax = fc.oneof(
  fc
    .tuple(
      dnsName,
      fc.constantFrom('/', '?', '#', '\\', '%', '@', ':', ' ', ';', '&', '*', '_', '\u0000', '%2f'),
      dnsName,
    )
    .map(([a, separator, b]) => `${a}${separator}${b}`),
  dnsName.map((name) => `http://${name}`),
  dnsName.map((name) => `${name}:443`),
  dnsName.map((name) => `user:pw@${name}`),
  fc.constantFrom(
    '%65xample.com',
    'victim.com/attacker.com',
    'a.com?x=1',
    'a.com#f',
    'a.com\\b.com',
  ),
);
const internationalised = fc.constantFrom(
  'münchen.de',
  'MÜNCHEN.DE',
  'bücher.example',
  '例え.テスト',
  'ＥＸＡＭＰＬＥ．com',
  'xn--mnchen-3ya.de',
  'xn--zz.com',
  'faß.de',
  'ουτοπία.δπθ.gr',
  'a\u200db.com',
  'ℌ.com',
  'مثال.إختبار',
);
const oddShapes = fc.constantFrom(
  '',
  ' ',
  '.',
  '..',
  'com',
  '.com',
  'a..b',
  '-a.com',
  'a-.com',
  'a.com..',
  '*.a.com',
  'a_b.com',
  'localhost',
);

/** Domains: DNS names (cased, padded, dotted), IP literals, URL syntax, IDNs, junk, long ones. */
export const anyDomain: fc.Arbitrary<string> = fc
  .oneof(
    { weight: 4, arbitrary: decorated },
    { weight: 2, arbitrary: ipLiteral },
    { weight: 3, arbitrary: urlSyntax },
    { weight: 2, arbitrary: internationalised },
    { weight: 2, arbitrary: oddShapes },
    { weight: 1, arbitrary: nearLimit },
    { weight: 2, arbitrary: anyText },
  )
  .filter(clean);

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
// The WHATWG URL host parser reads a name whose last label is a number (decimal, octal or 0x hex)
// as IPv4, so such a name is an address, not a DNS name.
const NUMBER = /^(?:0x[0-9a-f]*|[0-9]+)$/;

const isDnsName = (ascii: string | null): ascii is string =>
  ascii !== null &&
  ascii.length <= 253 &&
  ascii.split('.').length >= 2 &&
  ascii.split('.').every((label) => LABEL.test(label));

/**
 * The contract's domain rule: trimmed, lower-cased, one trailing dot dropped, IDNA (UTS 46) to
 * ASCII, then at least two labels of 1-63 letters, digits or hyphens (no hyphen at either end),
 * 253 characters at most, and not an IP address. Where a strict and a lenient reading of UTS 46
 * disagree, or only the last label is a number, the contract leaves the answer open.
 */
export function domainVerdict(raw: string): { verdict: Verdict; ascii?: string } {
  const prepared = raw.trim().toLowerCase().replace(/\.$/, '');
  const strict = toASCII(prepared, {
    checkBidi: true,
    checkHyphens: true,
    checkJoiners: true,
    useSTD3ASCIIRules: true,
    verifyDNSLength: true,
  });
  const lenient = toASCII(prepared);
  if (!isDnsName(strict) && !isDnsName(lenient)) return { verdict: 'invalid' };
  if (!isDnsName(strict) || strict !== lenient) return { verdict: 'either' };
  const labels = strict.split('.');
  if (labels.every((label) => NUMBER.test(label))) return { verdict: 'invalid' };
  if (NUMBER.test(labels.at(-1) ?? '')) return { verdict: 'either' };
  return { verdict: 'valid', ascii: strict };
}

// ---- requestDevServer ----

const nonBlankRule = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom('main', 'repo-42', 'low', 'high', 'v1.2.3', 'feature/x'),
  },
  { weight: 3, arbitrary: anyText },
);
const envName = fc.oneof(
  { weight: 4, arbitrary: fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,12}$/) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '',
      '1ABC',
      'A-B',
      'A B',
      'A=B',
      'É',
      '__proto__',
      'constructor',
      'PATH',
      'a\u0000',
    ),
  },
  { weight: 1, arbitrary: anyText },
);
const envVar = fc.oneof(
  { weight: 8, arbitrary: fc.record({ name: envName, value: anyText }, { noNullPrototype: true }) },
  { weight: 1, arbitrary: fc.constantFrom<unknown>(null, { name: 'A' }, { value: 'x' }, 'A=1') },
);
const portMapping = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record(
      {
        port: fc.oneof(
          { weight: 4, arbitrary: fc.constantFrom(443, 8081) },
          { weight: 2, arbitrary: anyInt(443, 8081) },
          { weight: 1, arbitrary: notAnInt },
        ),
        targetPort: fc.oneof(
          { weight: 4, arbitrary: anyInt(1, 65535) },
          { weight: 1, arbitrary: notAnInt },
        ),
      },
      { noNullPrototype: true },
    ),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom<unknown>(null, { port: 443 }, { port: null, targetPort: 1 }),
  },
);

const orNull = <T>(arbitrary: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 1, arbitrary: fc.constant(null) }, { weight: 6, arbitrary: arbitrary });

/** RequestDevServerInput: each field absent, null, valid or hostile; lists short, some duplicates. */
export const devServerInput = fc.record(
  {
    repoId: orNull(fc.oneof(nonBlankRule, fc.integer(), fc.constant(1.5))),
    gitRef: orNull(nonBlankRule),
    devCommand: orNull(fc.oneof(fc.constantFrom('npm run dev', ''), anyText)),
    installCommand: orNull(fc.oneof(fc.constantFrom('npm ci', ''), anyText)),
    preDevCommandOnce: orNull(anyText),
    envVars: orNull(fc.array(envVar, { maxLength: 6 })),
    computeClass: orNull(nonBlankRule),
    timeout: orNull(
      fc.oneof({ weight: 5, arbitrary: anyInt(0) }, { weight: 1, arbitrary: notAnInt }),
    ),
    ports: orNull(fc.array(portMapping, { maxLength: 4 })),
    baseId: orNull(anyText),
    domain: orNull(anyText),
    repo: orNull(anyText),
  },
  { requiredKeys: [], noNullPrototype: true },
);

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const STRING_FIELDS = [
  'gitRef',
  'devCommand',
  'installCommand',
  'preDevCommandOnce',
  'computeClass',
  'baseId',
  'domain',
  'repo',
];
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The contract's checks of RequestDevServerInput, each failure with the path a client writes. */
export function devServerIssues(input: Record<string, unknown>): Issue[] {
  const issues: Issue[] = [];
  const at = (path: string, kind: Issue['kind']) => issues.push({ path: `input.${path}`, kind });
  for (const field of STRING_FIELDS) {
    const value = input[field];
    if (value !== undefined && value !== null && typeof value !== 'string') at(field, 'coercion');
  }
  const repoId = input.repoId;
  if (typeof repoId === 'number' && !Number.isInteger(repoId)) at('repoId', 'coercion');
  for (const field of ['repoId', 'gitRef', 'computeClass']) {
    const value = input[field];
    if (value === '') at(field, 'invalid');
    // "Non-empty": whether whitespace alone counts as empty is left open.
    else if (typeof value === 'string' && value.trim() === '') at(field, 'either');
  }
  issues.push(...intIssue(input.timeout, 'input.timeout', 0));
  const envVars = input.envVars;
  if (Array.isArray(envVars)) {
    const seen = new Set<unknown>();
    for (const [index, item] of envVars.entries()) {
      const path = `envVars[${index}]`;
      if (!isObject(item) || typeof item.name !== 'string' || typeof item.value !== 'string') {
        at(path, 'coercion');
        continue;
      }
      if (!ENV_NAME.test(item.name) || seen.has(item.name)) at(`${path}.name`, 'invalid');
      seen.add(item.name);
    }
  }
  const ports = input.ports;
  if (Array.isArray(ports)) {
    // One mapping per external port at most: a longer list is refused by its length alone.
    if (ports.length > 2) at('ports', 'invalid');
    const seen = new Set<unknown>();
    for (const [index, item] of ports.entries()) {
      const path = `ports[${index}]`;
      const missing = (key: string) =>
        !isObject(item) || item[key] === undefined || item[key] === null;
      if (!isObject(item) || missing('port') || missing('targetPort')) {
        at(path, 'coercion');
        continue;
      }
      const port = intIssue(item.port, `input.${path}.port`);
      const target = intIssue(item.targetPort, `input.${path}.targetPort`, 1, 65535);
      issues.push(...port, ...target);
      if (port.length === 0 && item.port !== 443 && item.port !== 8081)
        at(`${path}.port`, 'invalid');
      else if (port.length === 0 && seen.has(item.port)) at(`${path}.port`, 'invalid');
      seen.add(item.port);
    }
  }
  return issues;
}

/** What the upstream must receive for a valid input: given keys only, envVars as an object. */
export function devServerWire(input: Record<string, unknown>): Record<string, unknown> {
  const wire: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(input)) {
    if (value === undefined) continue;
    if (key === 'repoId' && typeof value === 'number') wire[key] = String(value);
    else if (key === 'envVars' && Array.isArray(value))
      wire[key] = Object.fromEntries(
        value.map((item: { name: string; value: string }) => [item.name, item.value]),
      );
    else wire[key] = value;
  }
  return wire;
}

// ---- cursors ----

/** Strings sent as `after`: random text, base64 of near-miss cursors, and base64url noise. */
export const anyCursor: fc.Arbitrary<string> = fc
  .oneof(
    anyText,
    fc.base64String({ maxLength: 40 }),
    fc
      .constantFrom(
        'repositories:-1',
        'repositories:1e3',
        'repositories:0x10',
        'repositories: 1',
        'repositories:99999999999999999999',
        'repositories:',
        'cursor:1',
        'arrayconnection:1',
      )
      .chain((text) =>
        fc.constantFrom(
          Buffer.from(text).toString('base64url'),
          Buffer.from(text).toString('base64'),
          text,
        ),
      ),
  )
  .filter(clean);

// ---- GraphQL literals ----

/** A value written as a GraphQL literal, as a client would inline it in the document. */
export function literal(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return `[${value.map(literal).join(', ')}]`;
  if (isObject(value))
    return `{${Object.entries(value)
      .filter(([, field]) => field !== undefined)
      .map(([key, field]) => `${key}: ${literal(field)}`)
      .join(', ')}}`;
  throw new Error(`no literal for ${typeof value}`);
}
