// The verification flow as a user walks it, against the real sandbox and a real DNS server that
// both the facade's resolver and the sandbox's point at.
import { createRequire } from 'node:module';
import type * as Tr46 from 'tr46';
import { describe, expect, it, vi } from 'vitest';
import { useDnsHarness } from '../helpers/harness.js';

const CREATE = `mutation($domain: String!) {
  createDomainVerification(input: { domain: $domain }) {
    id domain accountId verificationCode createdAt dnsRecord { type name value }
  }
}`;
const CHECK = `query($domain: String!, $code: String) {
  domainDnsCheck(domain: $domain, verificationCode: $code) { host values matches error }
}`;
const VERIFY = `mutation($domain: String!) {
  verifyDomain(input: { domain: $domain }) { domain verified message }
}`;

interface Verification {
  id: string;
  domain: string;
  accountId: string;
  verificationCode: string;
  createdAt: string;
  dnsRecord: { type: string; name: string; value: string };
}

const live = useDnsHarness();

async function run<T>(query: string, variables: Record<string, unknown>): Promise<T> {
  const response = await live.h.gql<Record<string, T>>(query, variables);
  expect(response.errors).toBeUndefined();
  return Object.values(response.data ?? {})[0] as T;
}

const create = (domain: string) => run<Verification>(CREATE, { domain });
const check = (domain: string, code?: string) =>
  run<{ host: string; values: string[]; matches: boolean | null; error: string | null }>(CHECK, {
    domain,
    code,
  });
const verify = (domain: string) =>
  run<{ domain: string; verified: boolean; message: string | null }>(VERIFY, { domain });

/** What the upstream was asked, in order: method, path and body. */
const upstream = () =>
  live.h.sandbox.requests().map(({ method, path, body }) => ({ method, path, body }));

const PATH = '/domains/v1/verifications';

describe('domain verification', () => {
  it('walks create, check, publish, check, verify', async () => {
    const created = await create('flow.example');
    expect(created).toMatchObject({ domain: 'flow.example', accountId: 'demo' });
    expect(created.dnsRecord).toEqual({
      type: 'TXT',
      name: '_service_custom_hostname.flow.example',
      value: created.verificationCode,
    });

    expect(await check('flow.example', created.verificationCode)).toMatchObject({
      host: created.dnsRecord.name,
      values: [],
      matches: false,
      error: expect.stringMatching(/^No such name/),
    });

    live.dns.setTxt(created.dnsRecord.name, [created.dnsRecord.value]);
    expect(await check('flow.example', created.verificationCode)).toEqual({
      host: created.dnsRecord.name,
      values: [created.verificationCode],
      matches: true,
      error: null,
    });

    expect(await verify('flow.example')).toEqual({
      domain: 'flow.example',
      verified: true,
      message: null,
    });
    // The checks are the facade's own look-ups; the upstream saw exactly create and verify.
    expect(upstream()).toEqual([
      { method: 'POST', path: PATH, body: { domain: 'flow.example' } },
      { method: 'PUT', path: PATH, body: { domain: 'flow.example' } },
    ]);
  });

  it('answers verified false with the upstream message for a wrong value', async () => {
    const created = await create('wrong.example');
    live.dns.setTxt(created.dnsRecord.name, ['svc-verify-not-the-code']);
    expect(await check('wrong.example', created.verificationCode)).toMatchObject({
      values: ['svc-verify-not-the-code'],
      matches: false,
      error: null,
    });
    expect(await verify('wrong.example')).toEqual({
      domain: 'wrong.example',
      verified: false,
      message:
        'TXT record at _service_custom_hostname.wrong.example does not contain the verification code',
    });
  });

  it('answers verified false before the record is published', async () => {
    await create('early.example');
    expect(await verify('early.example')).toEqual({
      domain: 'early.example',
      verified: false,
      message: 'No TXT record found at _service_custom_hostname.early.example',
    });
  });

  it('verifies when the code is one of several TXT values', async () => {
    const created = await create('several.example');
    live.dns.setTxt(created.dnsRecord.name, ['v=spf1 -all', created.verificationCode, 'other']);
    expect(await check('several.example', created.verificationCode)).toMatchObject({
      matches: true,
    });
    expect(await verify('several.example')).toMatchObject({ verified: true });
  });

  it('looks up and sends an internationalised domain in punycode', async () => {
    const created = await create('Bücher.example');
    expect(created.domain).toBe('xn--bcher-kva.example');
    expect(created.dnsRecord.name).toBe('_service_custom_hostname.xn--bcher-kva.example');
    live.dns.setTxt(created.dnsRecord.name, [created.verificationCode]);
    expect(await check('bücher.example', created.verificationCode)).toMatchObject({
      matches: true,
    });
    expect(await verify('BÜCHER.example.')).toEqual({
      domain: 'xn--bcher-kva.example',
      verified: true,
      message: null,
    });
    const body = { domain: 'xn--bcher-kva.example' };
    expect(upstream()).toEqual([
      { method: 'POST', path: PATH, body },
      { method: 'PUT', path: PATH, body },
    ]);
    // One query from the facade's check, one from the sandbox's verify; never the Unicode form.
    const host = '_service_custom_hostname.xn--bcher-kva.example';
    expect(live.dns.queries().map((query) => query.name)).toEqual([host, host]);
  });

  it.each([
    ['münchen.de', 'xn--mnchen-3ya.de'],
    ['faß.de', 'xn--fa-hia.de'],
    ['例え.テスト', 'xn--r8jz45g.xn--zckzah'],
    ['ＥＸＡＭＰＬＥ．ｃｏｍ', 'example.com'],
    ['bücher.example。', 'xn--bcher-kva.example'],
    ['xn--mnchen-3ya.de', 'xn--mnchen-3ya.de'],
  ])('sends %j upstream as %j', async (domain, sent) => {
    expect((await create(domain)).domain).toBe(sent);
    expect(upstream()).toEqual([{ method: 'POST', path: PATH, body: { domain: sent } }]);
  });

  it('trims, lower-cases and drops the trailing dot before sending', async () => {
    await create('  Trim.EXAMPLE. ');
    await verify('trim.example');
    expect(upstream().map((request) => request.body)).toEqual([
      { domain: 'trim.example' },
      { domain: 'trim.example' },
    ]);
  });

  it.each([
    ['createDomainVerification', CREATE],
    ['verifyDomain', VERIFY],
  ])('rejects invalid domains in %s naming input.domain, calling nothing', async (_, query) => {
    for (const domain of [
      '',
      'localhost',
      'bad_name.example',
      '-x.example',
      `${'a'.repeat(64)}.io`,
      // URL syntax that a URL parser would quietly cut, decode or turn into an IP address.
      'victim.com/attacker.com',
      'a.com?x=1',
      'a.com#f',
      'a.com\\b.com',
      'user@a.com',
      'a.com:8080',
      '%65xample.com',
      '0x7f.1',
      'a.0x7f',
      'example.0xff',
      '127.0.0.1',
      '1.2',
      '[::1]',
    ]) {
      const response = await live.h.gql(query, { domain });
      expect(response.data, domain).toBeNull();
      expect(response.errors?.[0]?.extensions.code, domain).toBe('BAD_USER_INPUT');
      expect(response.errors?.[0]?.message, domain).toMatch(
        /^Invalid input: input\.domain: must be a DNS name/,
      );
    }
    expect(upstream()).toEqual([]);
    expect(live.dns.queries()).toEqual([]);
  });

  it.each([
    ['createDomainVerification', CREATE],
    ['verifyDomain', VERIFY],
  ])('refuses a megabyte of domain name in %s without normalising it', async (_, query) => {
    // The module object the facade loads tr46 through (Node's require cache).
    const tr46 = createRequire(import.meta.url)('tr46') as typeof Tr46;
    const toASCII = vi.spyOn(tr46, 'toASCII');
    try {
      const response = await live.h.gql(query, { domain: `${'a.'.repeat(500_000)}b` });
      expect(response.data).toBeNull();
      expect(response.errors?.[0]?.extensions.code).toBe('BAD_USER_INPUT');
      expect(response.errors?.[0]?.message).toMatch(
        /^Invalid input: input\.domain: must be a DNS name/,
      );
      expect(toASCII).not.toHaveBeenCalled();
    } finally {
      toASCII.mockRestore();
    }
    expect(upstream()).toEqual([]);
  });
});

describe('domain verification credentials', () => {
  it('forwards the caller Authorization on create and verify, within its own account', async () => {
    const headers = { authorization: 'Bearer domain-owner' };
    const created = await live.h.gql<{ createDomainVerification: Verification }>(
      CREATE,
      { domain: 'owned.example' },
      headers,
    );
    expect(created.data?.createDomainVerification.accountId).not.toBe('demo');
    await live.h.gql(VERIFY, { domain: 'owned.example' }, headers);
    const sent = live.h.sandbox.requests().map((r) => [r.method, r.path, r.headers.authorization]);
    expect(sent).toEqual([
      ['POST', PATH, 'Bearer domain-owner'],
      ['PUT', PATH, 'Bearer domain-owner'],
    ]);
    // Another caller has no verification for that domain: an answer, not an error.
    const other = await live.h.gql<{ verifyDomain: { verified: boolean; message: string } }>(
      VERIFY,
      { domain: 'owned.example' },
      { authorization: 'Bearer someone-else' },
    );
    expect(other.data?.verifyDomain.verified).toBe(false);
  });
});
