import { isIP } from 'node:net';
import { z } from 'zod';

/** Thrown for a bad configuration value; main.ts prints its message as the one stderr line. */
export class ConfigError extends Error {}

const int = (min: number, max = Number.MAX_SAFE_INTEGER) =>
  z
    .string()
    .trim()
    .regex(/^\d+$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

const bool = z
  .string()
  .trim()
  .toLowerCase()
  .pipe(z.enum(['true', 'false', '1', '0', 'yes', 'no']))
  .transform((value) => value === 'true' || value === '1' || value === 'yes');

const list = z
  .string()
  .transform((value) =>
    value
      .split(',')
      .map((item) => item.trim())
      .filter((item) => item !== ''),
  );

// c-ares takes IP addresses only (a host name would need a resolver to resolve the resolver):
// 1.2.3.4, 1.2.3.4:5353, ::1, [::1]:5353. It silently wraps a port above 65535, so check it here.
function isDnsServer(entry: string): boolean {
  if (isIP(entry) === 6) return true;
  const match = /^(?:\[([^\]]+)\]|([^:]+))(?::(\d{1,5}))?$/.exec(entry);
  const port = match?.[3] === undefined ? 53 : Number(match[3]);
  return match !== null && isIP(match[1] ?? match[2] ?? '') !== 0 && port >= 1 && port <= 65535;
}
const dnsServer = z
  .string()
  .refine(isDnsServer, 'must be IP[:port] entries (host names are not accepted)');

const upstreamUrl = z
  .string()
  .trim()
  .pipe(z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }))
  .refine((value) => {
    const url = new URL(value);
    return url.username === '' && url.password === '';
  }, 'must not embed credentials; use UPSTREAM_API_KEY')
  .transform((value) => value.replace(/\/+$/, ''));

const schema = z.object({
  PORT: int(0, 65535).default(4000),
  HOST: z.string().trim().min(1).optional(),
  UPSTREAM_URL: upstreamUrl.optional(),
  UPSTREAM_API_KEY: z.string().trim().min(1).optional(),
  UPSTREAM_TIMEOUT_MS: int(1, 600_000).default(10_000),
  DEV_SERVER_TIMEOUT_MS: int(1, 600_000).default(60_000),
  UPSTREAM_CONNECTIONS: int(1, 1024).default(32),
  UPSTREAM_MAX_RESPONSE_BYTES: int(1024).default(8 * 1024 * 1024),
  UPSTREAM_RETRIES: int(0, 10).default(2),
  DNS_SERVERS: list.pipe(z.array(dnsServer, 'must be host[:port] entries')).optional(),
  DNS_TIMEOUT_MS: int(1, 60_000).default(3_000),
  DNS_TRIES: int(1, 10).default(2),
  MAX_PAGE_SIZE: int(1, 10_000).default(100),
  MAX_COALESCED_RANGE: int(0, 100_000).default(200),
  CLIENT_TOKENS: list.pipe(z.array(z.string())).optional(),
  ALLOW_ANONYMOUS_SERVICE_KEY: bool.default(false),
  SANDBOX_REPOSITORIES: int(0, 1_000_000).default(50),
  SANDBOX_PORT: int(0, 65535).default(0),
});

type Env = z.output<typeof schema>;

// Never echoed back, not even in a start-up error.
const SECRETS = new Set(['UPSTREAM_API_KEY', 'CLIENT_TOKENS']);

export interface Config {
  port: number;
  host: string | undefined;
  /** Unset: the embedded sandbox is started and used. */
  upstreamUrl: string | undefined;
  upstream: {
    apiKey: string | undefined;
    timeoutMs: number;
    devServerTimeoutMs: number;
    connections: number;
    maxResponseBytes: number;
    retries: number;
  };
  dns: { servers: string[] | undefined; timeoutMs: number; tries: number };
  maxPageSize: number;
  /** Pages of one request are merged into one upstream call when the covering range is this small. */
  maxCoalescedRange: number;
  clientTokens: string[] | undefined;
  allowAnonymousServiceKey: boolean;
  sandbox: { repositories: number; port: number };
}

function toConfig(env: Env): Config {
  return {
    port: env.PORT,
    host: env.HOST,
    upstreamUrl: env.UPSTREAM_URL,
    upstream: {
      apiKey: env.UPSTREAM_API_KEY,
      timeoutMs: env.UPSTREAM_TIMEOUT_MS,
      devServerTimeoutMs: env.DEV_SERVER_TIMEOUT_MS,
      connections: env.UPSTREAM_CONNECTIONS,
      maxResponseBytes: env.UPSTREAM_MAX_RESPONSE_BYTES,
      retries: env.UPSTREAM_RETRIES,
    },
    dns: { servers: env.DNS_SERVERS, timeoutMs: env.DNS_TIMEOUT_MS, tries: env.DNS_TRIES },
    maxPageSize: env.MAX_PAGE_SIZE,
    maxCoalescedRange: env.MAX_COALESCED_RANGE,
    clientTokens: env.CLIENT_TOKENS,
    allowAnonymousServiceKey: env.ALLOW_ANONYMOUS_SERVICE_KEY,
    sandbox: { repositories: env.SANDBOX_REPOSITORIES, port: env.SANDBOX_PORT },
  };
}

/** The only reader of the environment. Empty strings count as unset. */
export function loadConfig(source: NodeJS.ProcessEnv = process.env): Config {
  const env: Record<string, string> = {};
  for (const key of Object.keys(schema.shape)) {
    const value = source[key];
    if (value !== undefined && value !== '') env[key] = value;
  }
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const name = String(issue?.path[0] ?? 'configuration');
    const shown = SECRETS.has(name) ? '' : ` (got ${JSON.stringify(env[name])})`;
    throw new ConfigError(`${name}: ${issue?.message ?? 'invalid'}${shown}`);
  }
  const config = toConfig(parsed.data);
  if (config.upstream.apiKey && !config.clientTokens?.length && !config.allowAnonymousServiceKey) {
    throw new ConfigError(
      'UPSTREAM_API_KEY: service-key mode acts for every caller; set CLIENT_TOKENS, or ALLOW_ANONYMOUS_SERVICE_KEY=true to run without a client check',
    );
  }
  return config;
}

/** Defaults for tests and tools: the same schema, no environment. */
export function defaultConfig(overrides: Partial<Config> = {}): Config {
  return { ...loadConfig({}), ...overrides };
}
