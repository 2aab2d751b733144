import { describe, expect, it } from 'vitest';
import { createRedact } from '../../src/upstream/responses.js';
import { useHarness } from '../helpers/harness.js';

// Signs that URLs, HTML and base64 each write their own way.
const KEY = 'sk_live_7Hq2&xW9<pLmZ4"vR8/s+T3=';
const QUERY = '{ repositories(limit: 1) { total } }';
const CALLER = { authorization: 'Bearer client-token' };

const escapeHtml = (text: string) =>
  text.replace(
    /[&<>"']/g,
    (sign) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[sign] ?? '&#39;',
  );
const base64 = (text: string) => Buffer.from(text).toString('base64');

// As an upstream may quote the key it refused.
const ECHOES: Array<[string, string]> = [
  ['lower-cased', KEY.toLowerCase()],
  ['upper-cased', KEY.toUpperCase()],
  ['base64', base64(KEY)],
  ['base64url', Buffer.from(KEY).toString('base64url')],
  ['HTML-escaped', escapeHtml(KEY)],
  [
    'HTML-escaped, every sign a numeric reference',
    KEY.replace(/\W/g, (s) => `&#x${s.charCodeAt(0).toString(16).toUpperCase()};`),
  ],
  ['URL-encoded', encodeURIComponent(KEY)],
  ['URL-encoded twice', encodeURIComponent(encodeURIComponent(KEY))],
  [
    'percent-encoded, every byte',
    [...Buffer.from(KEY)].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join(''),
  ],
  [
    'JSON-escaped, every character a \\u escape',
    [...KEY].map((sign) => `\\u${sign.charCodeAt(0).toString(16).padStart(4, '0')}`).join(''),
  ],
  ['hex', Buffer.from(KEY).toString('hex')],
  ['JSON-escaped with its slashes', JSON.stringify(KEY).slice(1, -1).replaceAll('/', '\\/')],
  ['cut by its last character', KEY.slice(0, -1)],
  ['cut by its first character', KEY.slice(1)],
  ['cut to its middle', KEY.slice(6, 20)],
  ['cut by one, then base64', base64(KEY.slice(1))],
  ['cut by two, then base64', base64(KEY.slice(0, -2))],
  [
    'cut by one, then URL-encoded and upper-cased',
    encodeURIComponent(KEY.slice(0, -1)).toUpperCase(),
  ],
];

describe("the facade's key, echoed by the upstream", () => {
  const h = useHarness({
    config: { upstream: { apiKey: KEY }, clientTokens: ['client-token'] },
  });

  it.each(ECHOES)('never reaches the caller %s', async (_, echo) => {
    h.sandbox.setFault('GET /git/v1/repo', {
      status: 403,
      body: { message: `key ${echo} may not list` },
    });
    const [error] = (await h.gql(QUERY, {}, CALLER)).errors ?? [];
    expect(error?.message).toBe('key [redacted] may not list');
    expect(error?.extensions).toEqual({
      code: 'FORBIDDEN',
      upstream: { status: 403, message: 'key [redacted] may not list' },
    });
  });

  it("never reaches the caller in verifyDomain's answer", async () => {
    h.sandbox.setFault('PUT /domains/v1/verifications', {
      status: 404,
      body: { message: `no verification under ${base64(KEY)}` },
    });
    const verify = await h.gql<{ verifyDomain: { message: string } }>(
      'mutation { verifyDomain(input: { domain: "example.com" }) { message } }',
      {},
      CALLER,
    );
    expect(verify.data?.verifyDomain.message).toBe('no verification under [redacted]');
  });

  it.each(ECHOES)('never reaches the caller %s in a header passed back', async (_, echo) => {
    h.sandbox.setFault('GET /git/v1/repo', {
      headers: { 'x-ratelimit-scope': `key ${echo}`, 'ratelimit-remaining': '7' },
    });
    const answer = await h.gql(QUERY, {}, CALLER);
    expect(answer.errors).toBeUndefined();
    expect(answer.headers.get('x-ratelimit-scope')).toBe('key [redacted]');
    expect(answer.headers.get('ratelimit-remaining')).toBe('7');
  });

  // undici gives a name sent on several field lines as a list.
  it('never reaches the caller in a repeated header line passed back', async () => {
    h.sandbox.setFault('GET /git/v1/repo', {
      headers: { 'x-ratelimit-scope': ['core', `key ${KEY}`], 'ratelimit-remaining': '7' },
    });
    const answer = await h.gql(QUERY, {}, CALLER);
    expect(answer.errors).toBeUndefined();
    expect(answer.headers.get('x-ratelimit-scope')).toBe('core, key [redacted]');
  });

  it("leaves the upstream's own words as they are", async () => {
    const message = 'the key sent may not list repositories; ask for the live scope';
    h.sandbox.setFault('GET /git/v1/repo', { status: 403, body: { message } });
    const [error] = (await h.gql(QUERY, {}, CALLER)).errors ?? [];
    expect(error?.message).toBe(message);
  });
});

describe('createRedact', () => {
  it('takes out one stretch for pieces of the key side by side, and keeps what lies between', () => {
    const redact = createRedact([KEY]);
    expect(redact(`${KEY}${KEY.toLowerCase()} and ${base64(KEY)}.`)).toBe(
      '[redacted] and [redacted].',
    );
  });
});
