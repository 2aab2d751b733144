import { createRequire } from 'node:module';
import type * as Tr46 from 'tr46';
import { describe, expect, it, vi } from 'vitest';
import type { Config } from '../../src/config/load.js';
import { startSilentDnsServer } from '../helpers/dns-server.js';
import { type GraphQLResponse, postGraphQL, useDnsHarness } from '../helpers/harness.js';

const CHECK = `query($domain: String!, $code: String) {
  domainDnsCheck(domain: $domain, verificationCode: $code) { host values matches error }
}`;

interface Check {
  host: string;
  values: string[];
  matches: boolean | null;
  error: string | null;
}

const HOST = '_service_custom_hostname.example.com';

const live = useDnsHarness();

// The module object the facade loads tr46 through (Node's require cache), so a spy sees its calls.
const tr46 = createRequire(import.meta.url)('tr46') as typeof Tr46;

/** Runs `body` counting what tr46 is asked to normalise. */
async function watchingTr46(body: (inputs: () => string[]) => Promise<void>) {
  const toASCII = vi.spyOn(tr46, 'toASCII');
  try {
    await body(() => toASCII.mock.calls.map(([input]) => input));
  } finally {
    toASCII.mockRestore();
  }
}

const BOLD_A = String.fromCodePoint(0x1d41a);
const HANGUL_DECOMPOSED = '\u1100\u1161\u11a8';

/** An app over the same upstream client with other DNS settings. */
function appWith(dnsConfig: Partial<Config['dns']>) {
  const app = live.h.createApp({ config: { dns: dnsConfig } });
  return (variables: Record<string, unknown>) =>
    postGraphQL<{ domainDnsCheck: Check }>(app, CHECK, variables);
}

async function check(domain: string, code?: string) {
  const response = await live.h.gql<{ domainDnsCheck: Check }>(CHECK, { domain, code });
  expect(response.errors).toBeUndefined();
  return response.data?.domainDnsCheck as Check;
}

describe('domainDnsCheck', () => {
  it('finds the published code, joining a record sent in several strings', async () => {
    live.dns.setTxt(HOST, [['svc-verify-', 'abc123']]);
    expect(await check('example.com', 'svc-verify-abc123')).toEqual({
      host: HOST,
      values: ['svc-verify-abc123'],
      matches: true,
      error: null,
    });
    // It is the facade's own look-up: the upstream is not asked.
    expect(live.h.sandbox.requests()).toEqual([]);
  });

  it('answers matches null when no code is given', async () => {
    live.dns.setTxt(HOST, ['svc-verify-abc123']);
    expect(await check('example.com')).toMatchObject({
      values: ['svc-verify-abc123'],
      matches: null,
      error: null,
    });
  });

  it('matches any one of several TXT values, and none of them', async () => {
    live.dns.setTxt(HOST, ['v=spf1 -all', 'svc-verify-old', 'svc-verify-new']);
    const found = await check('example.com', 'svc-verify-new');
    expect(found).toMatchObject({ matches: true, error: null });
    expect([...found.values].sort()).toEqual(['svc-verify-new', 'svc-verify-old', 'v=spf1 -all']);
    expect(await check('example.com', 'svc-verify-other')).toMatchObject({
      matches: false,
      error: null,
    });
  });

  it('reads a record set too large for UDP over TCP', async () => {
    const values = Array.from({ length: 8 }, (_, i) => `${i}`.padEnd(250, 'x'));
    live.dns.setTxt(HOST, values);
    const result = await check('example.com', values[5]);
    expect(result).toMatchObject({ matches: true, error: null });
    expect(result.values).toHaveLength(8);
    expect(live.dns.queriesFor(HOST).map((query) => query.transport)).toContain('tcp');
  });

  it('says "no such name" for NXDOMAIN, with matches false', async () => {
    live.dns.remove(HOST);
    const result = await check('example.com', 'svc-verify-abc123');
    expect(result).toMatchObject({ host: HOST, values: [], matches: false });
    expect(result.error).toMatch(/^No such name: _service_custom_hostname\.example\.com/);
  });

  it('says there is no TXT record when the name exists without one', async () => {
    live.dns.set(HOST, { exists: true });
    const result = await check('example.com', 'svc-verify-abc123');
    expect(result).toMatchObject({ values: [], matches: false });
    expect(result.error).toMatch(/^No TXT record at that name/);
  });

  it('says the resolver refused or failed, with matches null', async () => {
    live.dns.set(HOST, { rcode: 'REFUSED' });
    expect(await check('example.com', 'c')).toMatchObject({
      values: [],
      matches: null,
      error: 'The resolver refused the query.',
    });
    live.dns.set(HOST, { rcode: 'SERVFAIL' });
    expect(await check('example.com', 'c')).toMatchObject({
      values: [],
      matches: null,
      error: 'The resolver failed (it answered SERVFAIL).',
    });
  });

  it('answers "timed out" within the configured time when the resolver never answers', async () => {
    const silent = await startSilentDnsServer();
    try {
      const run = appWith({ servers: [silent.address], timeoutMs: 300, tries: 2 });
      let ticks = 0;
      const ticker = setInterval(() => ticks++, 10);
      const started = performance.now();
      const response = await run({ domain: 'example.com', code: 'c' });
      const elapsed = performance.now() - started;
      clearInterval(ticker);
      expect(response.errors).toBeUndefined();
      expect(response.data?.domainDnsCheck).toMatchObject({
        values: [],
        matches: null,
        error: 'The resolver timed out: no answer within 300 ms. Try again later.',
      });
      expect(elapsed).toBeGreaterThanOrEqual(290);
      expect(elapsed).toBeLessThan(800);
      expect(silent.received()).toBeGreaterThanOrEqual(1);
      // The wait did not block the event loop: timers kept firing meanwhile.
      expect(ticks).toBeGreaterThan(10);
    } finally {
      await silent.close();
    }
  });

  it('says the resolver failed when nothing listens at its address', async () => {
    const silent = await startSilentDnsServer();
    const { address } = silent;
    await silent.close();
    const run = appWith({ servers: [address], timeoutMs: 1000, tries: 2 });
    const response = await run({ domain: 'example.com', code: 'c' });
    expect(response.data?.domainDnsCheck).toMatchObject({
      values: [],
      matches: null,
      error: 'The resolver failed (connection refused).',
    });
  });

  it('makes one DNS query per host and request, however often it is asked', async () => {
    live.dns.setTxt(HOST, ['svc-verify-abc123']);
    live.dns.setTxt('_service_custom_hostname.example.org', ['x']);
    const response = await live.h.gql<Record<string, Check>>(`{
      a: domainDnsCheck(domain: "example.com", verificationCode: "svc-verify-abc123") { matches }
      b: domainDnsCheck(domain: " EXAMPLE.com. ") { values }
      c: domainDnsCheck(domain: "example.com", verificationCode: "other") { matches }
      d: domainDnsCheck(domain: "example.org") { values }
    }`);
    expect(response.errors).toBeUndefined();
    expect(response.data).toEqual({
      a: { matches: true },
      b: { values: ['svc-verify-abc123'] },
      c: { matches: false },
      d: { values: ['x'] },
    });
    expect(live.dns.queriesFor(HOST)).toHaveLength(1);
    expect(live.dns.queriesFor('_service_custom_hostname.example.org')).toHaveLength(1);
    // A record of TTL 0 is not kept across requests: a second request sees what is there now.
    live.dns.setTxt(HOST, ['changed']);
    expect((await check('example.com')).values).toEqual(['changed']);
    expect(live.dns.queriesFor(HOST)).toHaveLength(2);
  });

  it('trims, lower-cases, drops the trailing dot and converts to punycode before looking up', async () => {
    live.dns.setTxt('_service_custom_hostname.xn--bcher-kva.example', ['svc-verify-idn']);
    expect(await check('  Bücher.EXAMPLE. ', ' svc-verify-idn ')).toEqual({
      host: '_service_custom_hostname.xn--bcher-kva.example',
      values: ['svc-verify-idn'],
      matches: true,
      error: null,
    });
    expect(live.dns.queries().map((query) => query.name)).toEqual([
      '_service_custom_hostname.xn--bcher-kva.example',
    ]);
  });

  it.each([
    '',
    '   ',
    'localhost',
    '-bad.example',
    'bad-.example',
    'a..example',
    'under_score.example',
    'exa mple.com',
    `${'a'.repeat(64)}.example`,
    `${'a.'.repeat(126)}ab`,
    'victim.com/attacker.com',
    'a.com?x=1',
    'a.com#f',
    'a.com\\b.com',
    '%65xample.com',
    'a.0x7f',
    '0x7f.1',
    '10.0.0.1',
  ])('rejects the domain %j as BAD_USER_INPUT without any query', async (domain) => {
    const response = await live.h.gql(CHECK, { domain, code: 'c' });
    expect(response.data).toBeNull();
    expect(response.errors?.[0]?.extensions.code).toBe('BAD_USER_INPUT');
    expect(response.errors?.[0]?.message).toMatch(/^Invalid input: domain: must be a DNS name/);
    expect(live.dns.queries()).toEqual([]);
    expect(live.h.sandbox.requests()).toEqual([]);
  });

  it('refuses a megabyte of domain name used by 16 fields without normalising it', async () => {
    // One field and fifteen aliases (MAX_ALIASES) over one variable of 1 MB, which fits MAX_BODY_BYTES.
    const fields = Array.from(
      { length: 16 },
      (_, i) => `${i === 0 ? '' : `f${i}: `}domainDnsCheck(domain: $domain) { host }`,
    );
    const domain = `${'a.'.repeat(500_000)}b`;
    await watchingTr46(async (normalised) => {
      const response = await live.h.gql(`query($domain: String!) { ${fields.join(' ')} }`, {
        domain,
      });
      expect(response.data).toBeNull();
      expect(response.errors?.[0]?.extensions.code).toBe('BAD_USER_INPUT');
      expect(response.errors?.[0]?.message).toMatch(/^Invalid input: domain: must be a DNS name/);
      expect(normalised()).toEqual([]);
    });
    expect(live.dns.queries()).toEqual([]);
    expect(live.h.sandbox.requests()).toEqual([]);
  });

  it.each([
    ['a name longer than four units per character of 253', `${'a'.repeat(62)}.`.repeat(17)],
    ['a label longer than four units per character of 63', `${'a'.repeat(253)}.example`],
    ['more labels than 253 characters can hold', `${'a.'.repeat(127)}a`],
  ])('refuses %s before normalising it', async (_, domain) => {
    await watchingTr46(async (normalised) => {
      const response = await live.h.gql(CHECK, { domain });
      expect(response.errors?.[0]?.extensions.code).toBe('BAD_USER_INPUT');
      expect(response.errors?.[0]?.message).toMatch(/^Invalid input: domain: must be a DNS name/);
      expect(normalised()).toEqual([]);
    });
    expect(live.dns.queries()).toEqual([]);
  });

  it.each([
    [
      'mathematical letters (two units each)',
      [63, 63, 63].map((n) => BOLD_A.repeat(n)).join('.'),
      [63, 63, 63].map((n) => 'a'.repeat(n)).join('.'),
    ],
    [
      'decomposed Hangul (three code points a syllable)',
      `${HANGUL_DECOMPOSED.repeat(56)}.${HANGUL_DECOMPOSED.repeat(56)}.com`,
      `xn--p39${'a'.repeat(56)}.xn--p39${'a'.repeat(56)}.com`,
    ],
    [
      'surrounding whitespace',
      `${' '.repeat(10_000)}example.com.${'\t'.repeat(10_000)}`,
      'example.com',
    ],
  ])('still accepts a name whose raw form is long: %s', async (_, domain, ascii) => {
    const host = `_service_custom_hostname.${ascii}`;
    live.dns.setTxt(host, ['svc-verify-long']);
    expect(await check(domain, 'svc-verify-long')).toEqual({
      host,
      values: ['svc-verify-long'],
      matches: true,
      error: null,
    });
  });

  it('rejects an empty verification code as BAD_USER_INPUT naming it', async () => {
    const response = await live.h.gql(CHECK, { domain: 'example.com', code: '  ' });
    expect(response.errors?.[0]?.extensions.code).toBe('BAD_USER_INPUT');
    expect(response.errors?.[0]?.message).toMatch(/verificationCode: must not be empty/);
    expect(live.dns.queries()).toEqual([]);
  });
});

describe('DNS look-up bounds', () => {
  const host = (name: string) => `_service_custom_hostname.${name}.example`;

  it('refuses a look-up past DNS_MAX_CONCURRENT at once, and frees each slot when its look-up ends', async () => {
    for (const name of ['one', 'two', 'three']) live.dns.set(host(name), { silent: true });
    const app = live.h.createApp({
      config: { dns: { timeoutMs: 1000, tries: 1, maxConcurrent: 2 } },
    });
    const ask = (name: string) =>
      postGraphQL<{ domainDnsCheck: Check }>(app, CHECK, { domain: `${name}.example` });
    // The second round proves the slots came back after the timeouts, and no more than two.
    for (const round of [1, 2]) {
      let settled = 0;
      const waiting = [ask('one'), ask('two')].map((answer) => answer.finally(() => settled++));
      await vi.waitFor(() => expect(live.dns.queries()).toHaveLength(2 * round));
      const refused = await ask('three');
      expect(settled).toBe(0);
      expect(refused.data).toBeNull();
      expect(refused.errors).toEqual([
        expect.objectContaining({
          message: 'Too many DNS look-ups in progress (DNS_MAX_CONCURRENT); try again in a moment',
          path: ['domainDnsCheck'],
          extensions: { code: 'RATE_LIMITED', retryAfter: 1 },
        }),
      ]);
      expect(live.dns.queriesFor(host('three'))).toEqual([]);
      for (const answer of await Promise.all(waiting)) {
        expect(answer.data?.domainDnsCheck.error).toMatch(/^The resolver timed out/);
      }
    }
    live.dns.setTxt(host('three'), ['svc-verify-3']);
    expect((await ask('three')).data?.domainDnsCheck.values).toEqual(['svc-verify-3']);
  });

  it('frees the slot of a look-up whose request went away', async () => {
    live.dns.set(host('slow'), { silent: true });
    live.dns.setTxt(host('fast'), ['svc-verify-fast']);
    const app = live.h.createApp({ config: { dns: { timeoutMs: 10_000, maxConcurrent: 1 } } });
    const gone = new AbortController();
    const abandoned = Promise.resolve(
      app.fetch('http://facade.test/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: CHECK, variables: { domain: 'slow.example' } }),
        signal: gone.signal,
      }),
    ).catch(() => undefined);
    await vi.waitFor(() => expect(live.dns.queriesFor(host('slow'))).toHaveLength(1));
    const busy = await postGraphQL(app, CHECK, { domain: 'fast.example' });
    expect(busy.errors?.[0]?.extensions.code).toBe('RATE_LIMITED');
    gone.abort();
    await abandoned;
    await vi.waitFor(async () => {
      const after = await postGraphQL<{ domainDnsCheck: Check }>(app, CHECK, {
        domain: 'fast.example',
      });
      expect(after.data?.domainDnsCheck.values).toEqual(['svc-verify-fast']);
    });
  });

  describe('MAX_UPSTREAM_CALLS', () => {
    const names = ['a', 'b', 'c', 'd', 'e'];
    // A host asked again is the same look-up and costs nothing more.
    const fields = [
      'a: domainDnsCheck(domain: "a.example") { values }',
      'again: domainDnsCheck(domain: " A.example. ") { values }',
      ...names.slice(1).map((n) => `${n}: domainDnsCheck(domain: "${n}.example") { values }`),
    ];
    const lookedUp = () =>
      live.dns
        .queries()
        .map((query) => query.name)
        .sort();
    const overBudget = (error: { message: string; extensions: { code?: string } }) => {
      expect(error.extensions.code).toBe('UPSTREAM_BUDGET_EXCEEDED');
      expect(error.message).toMatch(/MAX_UPSTREAM_CALLS=3/);
    };

    it('looks up no more hosts than the budget in one request, failing the fields past it', async () => {
      for (const name of names) live.dns.setTxt(host(name), [`svc-verify-${name}`]);
      const app = live.h.createApp({ config: { maxUpstreamCalls: 3 } });
      const response = await postGraphQL(app, `{ ${fields.join(' ')} }`);
      expect(response.errors?.length).toBeGreaterThan(0);
      for (const error of response.errors ?? []) {
        overBudget(error);
        expect([['d'], ['e']]).toContainEqual(error.path);
      }
      // The contract's domainDnsCheck is non-null, so a failed one nulls the answer's data.
      expect(response.data).toBeNull();
      expect(lookedUp()).toEqual([host('a'), host('b'), host('c')]);
    });

    it('answers the checks within the budget when each is deferred on its own', async () => {
      for (const name of names) live.dns.setTxt(host(name), [`svc-verify-${name}`]);
      const app = live.h.createApp({ config: { maxUpstreamCalls: 3 } });
      const response = await app.fetch('http://facade.test/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'multipart/mixed' },
        body: JSON.stringify({
          query: `{ ${fields.map((f) => `... @defer { ${f} }`).join(' ')} }`,
        }),
      });
      type Part = GraphQLResponse<Record<string, { values: string[] }>>;
      const parts = (await response.text())
        .split(/\r?\n---/)
        .map((chunk) => chunk.slice(chunk.search(/\r?\n\r?\n/)).trim())
        .filter((json) => json.startsWith('{'))
        .flatMap((json) => (JSON.parse(json) as { incremental?: Part[] }).incremental ?? []);
      const answered = Object.assign({}, ...parts.map((part) => part.data ?? {}));
      expect(answered).toEqual({
        a: { values: ['svc-verify-a'] },
        again: { values: ['svc-verify-a'] },
        b: { values: ['svc-verify-b'] },
        c: { values: ['svc-verify-c'] },
      });
      const errors = parts.flatMap((part) => part.errors ?? []);
      expect(errors.map((error) => error.path)).toEqual([['d'], ['e']]);
      errors.forEach(overBudget);
      expect(lookedUp()).toEqual([host('a'), host('b'), host('c')]);
    });
  });
});
