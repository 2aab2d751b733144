import { describe, expect, it } from 'vitest';
import {
  CORS_HEADERS,
  CSRF_HEADERS,
  corsOptions,
  createOriginMatcher,
  csrfVerdict,
} from '../../src/http/use-csrf-cors.js';

const APP = 'https://app.example.com';
const EVIL = 'https://evil.example';

const request = (method: string, headers: Record<string, string> = {}) =>
  new Request('http://facade.test/graphql', { method, headers });

describe('csrfVerdict', () => {
  const isAllowed = createOriginMatcher([APP]);
  const verdict = (method: string, headers: Record<string, string> = {}) =>
    csrfVerdict(request(method, headers), isAllowed);

  it('passes a cors fetch from an allowed origin with Sec-Fetch-Dest empty or absent', () => {
    const cors = { origin: APP, 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'cors' };
    expect(verdict('POST', cors)).toBe('pass');
    expect(verdict('POST', { ...cors, 'sec-fetch-dest': 'empty' })).toBe('pass');
    expect(verdict('POST', { ...cors, 'sec-fetch-dest': 'iframe' })).toBe('refuse');
    expect(verdict('POST', { ...cors, origin: EVIL })).toBe('refuse');
  });

  it('passes a POST a form cannot send, without Fetch Metadata', () => {
    const json = { origin: EVIL, 'content-type': ' Application/JSON ' };
    expect(verdict('POST', json)).toBe('pass');
    expect(verdict('POST', { origin: EVIL })).toBe('refuse');
  });

  it('refuses a form POST, whatever parameters follow its type', () => {
    for (const type of [
      'text/plain;charset=UTF-8',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
    ]) {
      expect(verdict('POST', { origin: EVIL, 'content-type': type })).toBe('refuse');
      expect(verdict('POST', { origin: EVIL, 'content-type': type, 'x-graphql-csrf': '1' })).toBe(
        'pass',
      );
    }
  });

  it('refuses a GET from another origin whatever its Content-Type says', () => {
    expect(verdict('GET', { origin: EVIL, 'content-type': 'application/json' })).toBe('refuse');
    expect(verdict('GET', { origin: APP })).toBe('pass');
    expect(verdict('GET')).toBe('pass');
  });
});

describe('createOriginMatcher', () => {
  it('matches an exact origin only as written', () => {
    const matches = createOriginMatcher([APP]);
    expect(matches(APP)).toBe(true);
    for (const origin of [`${APP}:443`, 'http://app.example.com', 'htxps://app.example.com'])
      expect(matches(origin)).toBe(false);
  });

  it('matches any subdomain of a wildcard, with its scheme and port, never the host itself', () => {
    const matches = createOriginMatcher(['https://*.example.com:8443']);
    expect(matches('https://a.example.com:8443')).toBe(true);
    expect(matches('https://a.b.example.com:8443')).toBe(true);
    for (const origin of [
      'https://example.com:8443',
      'https://a.example.com',
      'http://a.example.com:8443',
      'https://a:1@b.example.com:8443',
    ])
      expect(matches(origin)).toBe(false);
  });

  it('matches nothing without origins', () => {
    expect(createOriginMatcher()(APP)).toBe(false);
  });
});

describe('corsOptions', () => {
  const EXPOSED = [
    'x-request-id',
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

  it('allows the same origin only without CORS_ORIGINS', () => {
    expect(corsOptions(undefined)).toBe(false);
    expect(corsOptions([])).toBe(false);
  });

  it('allows an allowed origin alone, without credentials', () => {
    const cors = corsOptions([APP], ['x-tenant']);
    if (typeof cors !== 'function') throw new Error('expected a function of the request');
    expect(cors(request('OPTIONS', { origin: APP }), {})).toEqual({
      origin: [APP],
      credentials: false,
      methods: ['GET', 'POST'],
      allowedHeaders: [...CORS_HEADERS, ...CSRF_HEADERS, 'x-tenant'],
      exposedHeaders: EXPOSED,
      maxAge: 600,
    });
    expect(cors(request('OPTIONS', { origin: EVIL }), {})).toBe(false);
    expect(cors(request('OPTIONS'), {})).toBe(false);
  });

  it("exposes the upstream's headers that UPSTREAM_RESPONSE_HEADERS passes back", () => {
    const cors = corsOptions([APP], [], ['x-quota-left', 'retry-after']);
    if (typeof cors !== 'function') throw new Error('expected a function of the request');
    expect(cors(request('GET', { origin: APP }), {})).toMatchObject({
      exposedHeaders: [...EXPOSED, 'x-quota-left'],
    });
  });

  it('allows the built-in headers only without CORS_ALLOWED_HEADERS', () => {
    const cors = corsOptions([APP]);
    if (typeof cors !== 'function') throw new Error('expected a function of the request');
    expect(cors(request('OPTIONS', { origin: APP }), {})).toMatchObject({
      allowedHeaders: [...CORS_HEADERS, ...CSRF_HEADERS],
    });
  });
});
