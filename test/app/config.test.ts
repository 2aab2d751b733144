import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/load.js';

describe('DNS configuration', () => {
  it('accepts IP resolvers with optional ports', () => {
    expect(
      loadConfig({
        DNS_SERVERS: '127.0.0.1:5353, ::1,[::1]:53',
        DNS_TIMEOUT_MS: '500',
        DNS_TRIES: '3',
        DNS_MAX_CONCURRENT: '8',
      }).dns,
    ).toEqual({
      servers: ['127.0.0.1:5353', '::1', '[::1]:53'],
      timeoutMs: 500,
      tries: 3,
      maxConcurrent: 8,
      cacheMaxTtlS: 300,
      cacheEntries: 10_000,
    });
    expect(loadConfig({}).dns.servers).toBeUndefined();
    expect(loadConfig({}).dns.maxConcurrent).toBe(64);
  });

  it.each(['0', '10001', 'many'])('refuses DNS_MAX_CONCURRENT=%j naming the variable', (value) => {
    expect(() => loadConfig({ DNS_MAX_CONCURRENT: value })).toThrow(/^DNS_MAX_CONCURRENT: /);
  });

  it.each([
    ['DNS_CACHE_MAX_TTL_S', '-1'],
    ['DNS_CACHE_MAX_TTL_S', '86401'],
    ['DNS_CACHE_ENTRIES', '0'],
    ['JOIN_UPSTREAM_CALLS', 'sometimes'],
  ])('refuses %s=%j naming the variable', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(`^${name}: `));
  });

  it.each(['live.dns.google', '1.2.3.4:99999', '1.2.3:53'])(
    'refuses DNS_SERVERS=%j naming the variable',
    (value) => {
      expect(() => loadConfig({ DNS_SERVERS: value })).toThrow(
        /^DNS_SERVERS: must be IP\[:port\] entries/,
      );
    },
  );
});

describe('start-up configuration', () => {
  it.each([
    'not-a-url',
    'http://',
    'http://[::1',
    'http://api.example:99999',
    'ftp://api.example',
    'http://api.example/v1?key=s3cretpw',
    'http://user:s3cretpw@exa mple.com',
    'http://user:s3cretpw@api.example',
  ])('refuses UPSTREAM_URL=%j without echoing it', (value) => {
    expect(() => loadConfig({ UPSTREAM_URL: value })).toThrow(ConfigError);
    expect(() => loadConfig({ UPSTREAM_URL: value })).toThrow(/^UPSTREAM_URL: /);
    try {
      loadConfig({ UPSTREAM_URL: value });
    } catch (error) {
      expect((error as Error).message).not.toContain(value);
      expect((error as Error).message).not.toContain('s3cretpw');
    }
  });

  it('keeps a valid UPSTREAM_URL, without its trailing slash', () => {
    expect(loadConfig({ UPSTREAM_URL: 'https://api.example:8443/base/' }).upstreamUrl).toBe(
      'https://api.example:8443/base',
    );
  });

  it('refuses DNS_SERVERS that name no server', () => {
    expect(() => loadConfig({ DNS_SERVERS: ',,,' })).toThrow(ConfigError);
    expect(() => loadConfig({ DNS_SERVERS: ',,,' })).toThrow(/^DNS_SERVERS: .*at least one/);
  });

  it.each(['tok with space', 'good-token,bad"quote', 'a,,\u00e9t\u00e9', ' , '])(
    'refuses CLIENT_TOKENS=%j that no bearer token can match, without echoing it',
    (value) => {
      const env = { UPSTREAM_API_KEY: 'key', CLIENT_TOKENS: value };
      expect(() => loadConfig(env)).toThrow(ConfigError);
      expect(() => loadConfig(env)).toThrow(/^CLIENT_TOKENS: /);
      try {
        loadConfig(env);
      } catch (error) {
        for (const token of value.split(',').filter((t) => t.trim().length > 2))
          expect((error as Error).message).not.toContain(token.trim());
      }
    },
  );

  it('accepts bearer tokens of every token68 character', () => {
    const tokens = 'abc-DEF_123.~+/==, tok2';
    expect(loadConfig({ UPSTREAM_API_KEY: 'key', CLIENT_TOKENS: tokens }).clientTokens).toEqual([
      'abc-DEF_123.~+/==',
      'tok2',
    ]);
  });

  it('refuses HOST values that are neither an address nor a host name', () => {
    expect(() => loadConfig({ HOST: 'http://0.0.0.0' })).toThrow(/^HOST: /);
    expect(loadConfig({ HOST: '::' }).host).toBe('::');
    expect(loadConfig({ HOST: 'facade.internal' }).host).toBe('facade.internal');
  });

  // Tests and tools build apps without one; the process refuses to start (test/e2e/process.test.ts).
  it('leaves UPSTREAM_URL unset when it is, in production too', () => {
    expect(
      loadConfig({ NODE_ENV: 'production', UPSTREAM_URL: 'https://api.example' }).upstreamUrl,
    ).toBe('https://api.example');
    expect(loadConfig({ NODE_ENV: 'production' }).upstreamUrl).toBeUndefined();
    expect(loadConfig({}).upstreamUrl).toBeUndefined();
  });
});

// main.ts prints a ConfigError's message after "Invalid configuration: " as the one stderr line of
// a failed start (test/e2e/process.test.ts proves that line with one case).
describe('configuration errors', () => {
  it.each<[Record<string, string>, RegExp, string?]>([
    [{ MAX_DEPTH: 'deep' }, /^MAX_DEPTH: must be a whole number/],
    [{ REDIS_URL: 'http://user:hunter2@cache:6379' }, /^REDIS_URL: /, 'hunter2'],
    [{ UPSTREAM_API_KEY: 'key-hunter2' }, /^UPSTREAM_API_KEY: .*CLIENT_TOKENS/, 'hunter2'],
    [
      { UPSTREAM_URL: 'http://user:s3cretpw@api.example' },
      /^UPSTREAM_URL: .*credentials/,
      's3cretpw',
    ],
    [{ PORT: '4000', METRICS_PORT: '4000' }, /^METRICS_PORT: .*PORT/],
  ])('refuses %j in one line naming the variable, without a secret', (env, pattern, secret) => {
    let error: unknown;
    try {
      loadConfig(env);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const { message } = error as ConfigError;
    expect(message).toMatch(pattern);
    expect(message).not.toContain('\n');
    if (secret) expect(message).not.toContain(secret);
  });

  it('names the variable for every kind of bad value', () => {
    const cases: Array<[Record<string, string>, string]> = [
      [{ PORT: '70000' }, 'PORT'],
      [{ RATE_LIMIT_POINTS: '-1' }, 'RATE_LIMIT_POINTS'],
      [{ RATE_LIMIT_WINDOW_S: '0' }, 'RATE_LIMIT_WINDOW_S'],
      [{ MAX_BODY_BYTES: '1e6' }, 'MAX_BODY_BYTES'],
      [{ INTROSPECTION: 'maybe' }, 'INTROSPECTION'],
      [{ CORS_ORIGINS: 'https://ok.example,https://bad.example/path' }, 'CORS_ORIGINS'],
      [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
      [{ SHUTDOWN_GRACE_MS: 'soon' }, 'SHUTDOWN_GRACE_MS'],
      [{ REQUEST_TIMEOUT_MS: '10' }, 'REQUEST_TIMEOUT_MS'],
      [{ MAX_CONNECTIONS: '0' }, 'MAX_CONNECTIONS'],
    ];
    for (const [env, name] of cases) {
      expect(() => loadConfig(env)).toThrow(new RegExp(`^${name}: `));
    }
    const ok = loadConfig({ CORS_ORIGINS: 'https://a.example, http://localhost:5173' });
    expect(ok.corsOrigins).toEqual(['https://a.example', 'http://localhost:5173']);
  });
});

describe('FORWARD_HEADERS', () => {
  it('reads header names, lower-cased, without duplicates', () => {
    expect(
      loadConfig({ FORWARD_HEADERS: 'Accept-Language, x-tenant-id,X-Tenant-Id' }).forwardHeaders,
    ).toEqual(['accept-language', 'x-tenant-id']);
    expect(loadConfig({}).forwardHeaders).toEqual([]);
  });

  it.each([
    ['cookie', /cookie \(a browser credential/],
    ['x-tenant-id,Set-Cookie', /set-cookie \(a browser credential/],
    ['x-tenant-id,Cookie', /must not name cookie \(/],
    ['connection', /connection \(a hop-by-hop header\)/],
    ['keep-alive', /hop-by-hop/],
    ['te', /hop-by-hop/],
    ['trailer', /hop-by-hop/],
    ['transfer-encoding', /hop-by-hop/],
    ['upgrade', /hop-by-hop/],
    ['Proxy-Authorization', /proxy-authorization \(a hop-by-hop header\)/],
    ['host', /host \(set by/],
    ['content-length', /content-length \(set by/],
    ['authorization', /authorization \(forwarded already/],
    ['x-forwarded-for', /x-forwarded-for \(an identity a caller can spoof\)/],
    ['X-Forwarded-Host', /x-forwarded-host \(an identity/],
    ['forwarded', /forwarded \(an identity/],
    ['x-real-ip', /x-real-ip \(an identity/],
    ['x-facade-debug', /x-facade-debug \(the facade's own header/],
    ['content-encoding', /content-encoding \(describes the body/],
    ['x-graphql-csrf', /x-graphql-csrf \(the facade's own CSRF header\)/],
    ['x tenant', /header names/],
  ])('refuses FORWARD_HEADERS=%j in one line naming the variable', (value, reason) => {
    expect(() => loadConfig({ FORWARD_HEADERS: value })).toThrow(ConfigError);
    expect(() => loadConfig({ FORWARD_HEADERS: value })).toThrow(/^FORWARD_HEADERS: /);
    expect(() => loadConfig({ FORWARD_HEADERS: value })).toThrow(reason);
    try {
      loadConfig({ FORWARD_HEADERS: value });
    } catch (error) {
      expect((error as Error).message).not.toContain('\n');
    }
  });
});

/** The one line FORWARD_HEADERS stops start-up with, or undefined when it is accepted. */
function forwardHeadersRefusal(value: string): string | undefined {
  try {
    loadConfig({ FORWARD_HEADERS: value });
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
}

describe('FORWARD_HEADERS and what proxies set', () => {
  // Each set by a proxy, a load balancer or an identity-aware front for the upstream to trust.
  it.each([
    ['x-cluster-client-ip', /an address a proxy states/],
    ['fastly-client-ip', /a standard or a proxy's header/],
    ['x-envoy-external-address', /an address a proxy states/],
    ['x-original-forwarded-for', /an address a proxy states/],
    ['client-ip', /a standard or a proxy's header/],
    ['forwarded-for', /a standard or a proxy's header/],
    ['x-remote-user', /an identity, a credential or a trust/],
    ['x-auth-request-user', /an identity, a credential or a trust/],
    ['x-amzn-oidc-identity', /an identity, a credential or a trust/],
    ['cf-access-authenticated-user-email', /a standard or a proxy's header/],
    ['x-goog-authenticated-user-email', /an identity, a credential or a trust/],
    ['x-ms-client-principal', /an identity, a credential or a trust/],
    ['x-http-method-override', /overrides the method or the URL/],
    ['x-consumer-id', /an identity, a credential or a trust/],
    ['x-anonymous-consumer', /an identity, a credential or a trust/],
    ['x-spiffe-id', /an identity, a credential or a trust/],
    ['x-on-behalf-of', /a privilege or another identity to act as/],
    ['x-run-as', /a privilege or another identity to act as/],
    ['x-sudo', /a privilege or another identity to act as/],
    ['x-admin', /a privilege or another identity to act as/],
    ['x-permissions', /a privilege or another identity to act as/],
    ['x-acl', /a privilege or another identity to act as/],
    ['x-bearer', /an identity, a credential or a trust/],
    ['x-creds', /an identity, a credential or a trust/],
    ['x-pwd', /an identity, a credential or a trust/],
    ['x-otp', /an identity, a credential or a trust/],
  ])('refuses %s in one line naming the variable and the header', (name, why) => {
    const line = forwardHeadersRefusal(`x-tenant-id,${name.toUpperCase()}`);
    expect(line).toMatch(new RegExp(`^FORWARD_HEADERS: must not name ${name} \\(`));
    expect(line).toMatch(why);
    expect(line).not.toContain('\n');
  });

  // Names made up here, as a proxy not yet written would name its headers.
  it.each([
    ['x-newcdn-client-ip', /an address/],
    ['x-acme-remote-addr', /an address/],
    ['x-mesh-peer-host', /an address/],
    ['x-gw-authenticated-subject', /an identity/],
    ['x-sso-username', /an identity/],
    ['x-api-key', /a credential/],
    ['x-ssl-client-cert', /a credential/],
    ['x-user_email', /an identity/],
    ['x-envoy-internal', /a trust/],
    ['x-original-url', /overrides the method or the URL/],
    ['x-rewrite-path', /overrides the method or the URL/],
    ['x-b3-traceid', /trace context/],
    ['x-envoy-decorator-operation', /a proxy's or a platform's own header/],
    ['x-upstream-timeout', /a proxy's or a platform's own header/],
    ['x-cdn-geo', /a proxy's or a platform's own header/],
    ['akamai-origin-hop', /a standard or a proxy's header/],
    ['tenant-id', /only accept-language is forwarded/],
    ['user-agent', /a standard or a proxy's header/],
    ['constructor', /a standard or a proxy's header/],
    ['x-kong-consumer-username', /an identity/],
    ['x-act-as', /another identity to act as/],
    ['x-delegated-by', /another identity to act as/],
    ['x-user-entitlements', /an identity/],
    ['x-sudo-mode', /a privilege/],
    ['x-hub-signature', /a credential/],
    ['x-mfa-code', /a credential/],
    ['x-sw8-baggage', /trace context/],
  ])('refuses %s by its shape and its words', (name, why) => {
    expect(forwardHeadersRefusal(name)).toMatch(why);
  });

  it('forwards headers of the business: a tenant, a language, an API version', () => {
    const names = 'x-tenant-id, accept-language, X-API-Version, x-correlation-id, x-locale';
    expect(forwardHeadersRefusal(names)).toBeUndefined();
    expect(loadConfig({ FORWARD_HEADERS: names }).forwardHeaders).toEqual([
      'x-tenant-id',
      'accept-language',
      'x-api-version',
      'x-correlation-id',
      'x-locale',
    ]);
  });
});

describe('CORS_ORIGINS', () => {
  it('takes exact origins and subdomain wildcards', () => {
    expect(
      loadConfig({ CORS_ORIGINS: 'https://*.example.com, http://localhost:5173' }).corsOrigins,
    ).toEqual(['https://*.example.com', 'http://localhost:5173']);
    expect(loadConfig({ CORS_ORIGINS: 'http://*.localhost:5173' }).corsOrigins).toEqual([
      'http://*.localhost:5173',
    ]);
  });

  it.each([
    ['https://app.example.com/', /without a trailing slash \(https:\/\/app\.example\.com\)/],
    ['https://app.example.com/path', /origins like/],
    ['*', /origins like/],
    ['https://*', /origins like/],
    ['https://a.*.example.com', /origins like/],
    ['https://*.com', /a whole top-level domain/],
  ])('refuses CORS_ORIGINS=%j in one line naming the variable', (value, reason) => {
    expect(() => loadConfig({ CORS_ORIGINS: value })).toThrow(/^CORS_ORIGINS: /);
    expect(() => loadConfig({ CORS_ORIGINS: value })).toThrow(reason);
  });
});

describe('CLIENT_TOKENS', () => {
  it('refuses client tokens without a service key: nothing would check them', () => {
    expect(() => loadConfig({ CLIENT_TOKENS: 'abc' })).toThrow(
      /^CLIENT_TOKENS: checked only in service-key mode; set UPSTREAM_API_KEY/,
    );
    expect(loadConfig({ CLIENT_TOKENS: 'abc', UPSTREAM_API_KEY: 'k' }).clientTokens).toEqual([
      'abc',
    ]);
  });
});

describe('schema disclosure', () => {
  it('lets the subgraph SDL follow INTROSPECTION unless SUBGRAPH_SDL says otherwise', () => {
    expect(loadConfig({}).limits).toMatchObject({ introspection: true, subgraphSdl: true });
    expect(loadConfig({ INTROSPECTION: 'false' }).limits).toMatchObject({
      introspection: false,
      subgraphSdl: false,
    });
    expect(loadConfig({ INTROSPECTION: 'false', SUBGRAPH_SDL: 'true' }).limits).toMatchObject({
      introspection: false,
      subgraphSdl: true,
    });
  });
});

describe('OpenTelemetry configuration', () => {
  it('exports nothing without an endpoint, or when the SDK or the exporter is turned off', () => {
    expect(loadConfig({}).tracing).toBeUndefined();
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
    expect(loadConfig({ ...endpoint, OTEL_SDK_DISABLED: 'true' }).tracing).toBeUndefined();
    expect(loadConfig({ ...endpoint, OTEL_TRACES_EXPORTER: 'none' }).tracing).toBeUndefined();
  });

  it('exports with either endpoint, the traces protocol winning over the general one', () => {
    expect(
      loadConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example/otlp/traces' })
        .tracing,
    ).toEqual({ protocol: 'http/protobuf', headers: {} });
    expect(
      loadConfig({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
      }).tracing?.protocol,
    ).toBe('http/json');
  });

  it('knows the exporter headers as the exporter reads them, to keep them out of errors', () => {
    expect(
      loadConfig({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=general,x-team=web%20platform',
        OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x-api-key=traces',
      }).tracing?.headers,
    ).toEqual({ 'x-api-key': 'traces', 'x-team': 'web platform' });
  });

  it('carries W3C trace context and baggage unless OTEL_PROPAGATORS says otherwise', () => {
    expect(loadConfig({}).propagators).toEqual(['tracecontext', 'baggage']);
    expect(loadConfig({ OTEL_PROPAGATORS: ' tracecontext ' }).propagators).toEqual([
      'tracecontext',
    ]);
    expect(loadConfig({ OTEL_PROPAGATORS: 'none' }).propagators).toEqual([]);
  });

  it.each([
    ['OTEL_EXPORTER_OTLP_PROTOCOL', 'grpc', /gRPC is not built in/],
    ['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'http/xml', /http\/protobuf or http\/json/],
    ['OTEL_TRACES_EXPORTER', 'zipkin', /must be otlp or none/],
    ['OTEL_PROPAGATORS', 'tracecontext,b3', /b3, jaeger, xray and ottrace are not built in/],
  ])('refuses %s=%j naming the variable', (name, value, message) => {
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(`^${name}: `));
    expect(() => loadConfig({ [name]: value })).toThrow(message);
  });

  it('leaves the values the SDK reads to the SDK', () => {
    expect(() =>
      loadConfig({
        OTEL_TRACES_SAMPLER: 'parentbased_jaeger_remote',
        OTEL_TRACES_SAMPLER_ARG: 'endpoint=http://localhost:14250',
        OTEL_RESOURCE_ATTRIBUTES: 'team=web',
      }),
    ).not.toThrow();
  });

  it('never echoes an exporter endpoint, which can hold a password', () => {
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318/s3cret' })).toThrow(
      /^OTEL_EXPORTER_OTLP_ENDPOINT: must be an http\(s\) URL such as http:\/\/localhost:4318 \(gRPC is not built in\)$/,
    );
  });
});
