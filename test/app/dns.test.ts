import { describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { startSilentDnsServer } from '../helpers/dns-server.js';
import { postGraphQL, useDnsHarness } from '../helpers/harness.js';

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

/** An app over the same upstream client with other DNS settings. */
function appWith(dnsConfig: Config['dns']) {
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
    // Per request, not cached across requests: a second request sees what is there now.
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
    '%65xample.com',
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

  it('rejects an empty verification code as BAD_USER_INPUT naming it', async () => {
    const response = await live.h.gql(CHECK, { domain: 'example.com', code: '  ' });
    expect(response.errors?.[0]?.extensions.code).toBe('BAD_USER_INPUT');
    expect(response.errors?.[0]?.message).toMatch(/verificationCode: must not be empty/);
    expect(live.dns.queries()).toEqual([]);
  });
});
