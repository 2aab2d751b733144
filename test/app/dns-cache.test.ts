// TXT answers kept for their TTL, bounded, and never a failure (src/upstream/dns.ts, txt-query.ts).
import { Packet } from 'dns2';
import { describe, expect, it } from 'vitest';
import type { Config } from '../../src/config/load.js';
import { decodeTxtAnswer, encodeTxtQuery } from '../../src/upstream/txt-query.js';
import { postGraphQL, useDnsHarness } from '../helpers/harness.js';

const CHECK = `query($domain: String!) { domainDnsCheck(domain: $domain) { values error } }`;
const HOST = '_service_custom_hostname.cache.example';
const OTHER = '_service_custom_hostname.other.example';

interface Check {
  values: string[];
  error: string | null;
}

const live = useDnsHarness();

/** A check through an app with these DNS settings (default: the harness's). */
function checker(dns: Partial<Config['dns']> = {}) {
  const app = live.h.createApp({ config: { dns } });
  return async (domain = 'cache.example') => {
    const answer = await postGraphQL<{ domainDnsCheck: Check }>(app, CHECK, { domain });
    expect(answer.errors).toBeUndefined();
    return answer.data?.domainDnsCheck as Check;
  };
}

describe('the DNS answer cache', () => {
  it('reuses a found answer for its TTL, across requests', async () => {
    const check = checker();
    live.dns.set(HOST, { txt: ['first'], ttl: 60 });
    expect((await check()).values).toEqual(['first']);
    live.dns.set(HOST, { txt: ['second'], ttl: 60 });
    expect((await check()).values).toEqual(['first']);
    expect(live.dns.queriesFor(HOST)).toHaveLength(1);
  });

  it('asks again once the TTL has passed', async () => {
    const check = checker();
    live.dns.set(HOST, { txt: ['first'], ttl: 1 });
    expect((await check()).values).toEqual(['first']);
    live.dns.set(HOST, { txt: ['second'], ttl: 1 });
    expect((await check()).values).toEqual(['first']);
    await expect.poll(async () => (await check()).values, { timeout: 3_000 }).toEqual(['second']);
  });

  it('keeps an answer no longer than DNS_CACHE_MAX_TTL_S', async () => {
    const check = checker({ cacheMaxTtlS: 1 });
    live.dns.set(HOST, { txt: ['first'], ttl: 86_400 });
    expect((await check()).values).toEqual(['first']);
    live.dns.set(HOST, { txt: ['second'], ttl: 86_400 });
    expect((await check()).values).toEqual(['first']);
    await expect.poll(async () => (await check()).values, { timeout: 3_000 }).toEqual(['second']);
  });

  it('never reuses NXDOMAIN, a name without TXT record, a failure or a TTL of 0', async () => {
    const check = checker();
    live.dns.remove(HOST);
    expect((await check()).error).toMatch(/^No such name/);
    live.dns.set(HOST, { exists: true });
    expect((await check()).error).toMatch(/^No TXT record/);
    live.dns.set(HOST, { rcode: 'SERVFAIL' });
    expect((await check()).error).toMatch(/SERVFAIL/);
    live.dns.set(HOST, { txt: ['now'], ttl: 0 });
    expect((await check()).values).toEqual(['now']);
    live.dns.set(HOST, { txt: ['published'], ttl: 60 });
    expect((await check()).values).toEqual(['published']);
    expect(live.dns.queriesFor(HOST)).toHaveLength(5);
  });

  it('keeps at most DNS_CACHE_ENTRIES names, dropping the oldest', async () => {
    const check = checker({ cacheEntries: 1 });
    live.dns.set(HOST, { txt: ['a'], ttl: 60 });
    live.dns.set(OTHER, { txt: ['b'], ttl: 60 });
    await check('cache.example');
    await check('other.example');
    await check('cache.example');
    expect(live.dns.queriesFor(HOST)).toHaveLength(2);
    expect(live.dns.queriesFor(OTHER)).toHaveLength(1);
  });

  it('keeps nothing with DNS_CACHE_MAX_TTL_S=0', async () => {
    const check = checker({ cacheMaxTtlS: 0 });
    live.dns.set(HOST, { txt: ['a'], ttl: 60 });
    await check();
    await check();
    expect(live.dns.queriesFor(HOST)).toHaveLength(2);
  });

  it('keeps nothing for a record set read over TCP, whose TTL c-ares does not give', async () => {
    const check = checker();
    const values = Array.from({ length: 8 }, (_, i) => `${i}`.padEnd(250, 'x'));
    live.dns.set(HOST, { txt: values, ttl: 60 });
    expect((await check()).values).toHaveLength(8);
    expect((await check()).values).toHaveLength(8);
    const tcp = live.dns.queriesFor(HOST).filter((query) => query.transport === 'tcp');
    expect(tcp).toHaveLength(2);
  });
});

describe('decodeTxtAnswer', () => {
  /** A response to `query` built by dns2, with `answers` as its answer section. */
  function response(query: Buffer, answers: Array<Record<string, unknown>>): Buffer {
    const reply = Packet.createResponseFromRequest(Packet.parse(query));
    for (const answer of answers) reply.answers.push(answer as never);
    return reply.toBuffer();
  }

  it('takes the smallest TTL of the records followed, and joins character-strings', () => {
    const query = encodeTxtQuery(7, HOST) as Buffer;
    const base = { class: Packet.CLASS.IN };
    const message = response(query, [
      { ...base, name: HOST, type: Packet.TYPE.CNAME, ttl: 30, domain: 'target.example' },
      { ...base, name: 'target.example', type: Packet.TYPE.TXT, ttl: 600, data: ['ab', 'cd'] },
      { ...base, name: 'target.example', type: Packet.TYPE.TXT, ttl: 90, data: 'e' },
    ]);
    expect(decodeTxtAnswer(message, 7, HOST)).toEqual({
      rcode: 0,
      truncated: false,
      values: ['abcd', 'e'],
      ttlS: 30,
    });
  });

  it('ignores a datagram that answers another query', () => {
    const query = encodeTxtQuery(7, HOST) as Buffer;
    const message = response(query, []);
    expect(decodeTxtAnswer(message, 8, HOST)).toBeUndefined();
    expect(decodeTxtAnswer(message, 7, OTHER)).toBeUndefined();
    expect(decodeTxtAnswer(query, 7, HOST)).toBeUndefined();
  });

  it('refuses a name no query can carry', () => {
    expect(encodeTxtQuery(1, `${'a'.repeat(64)}.example`)).toBeUndefined();
    expect(encodeTxtQuery(1, Array.from({ length: 9 }, () => 'a'.repeat(30)).join('.'))).toBe(
      undefined,
    );
  });
});
