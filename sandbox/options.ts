// The sandbox's settings from the environment, for its own entry (`npm run sandbox`) and for the
// development entry that starts it beside the facade (`npm start`, scripts/dev.ts).
import { promises as dnsPromises } from 'node:dns';
import type { SandboxOptions } from './server.js';

/** A bad value: its message names the variable. */
export class SettingError extends Error {}

function integer(env: NodeJS.ProcessEnv, name: string, min: number, max: number) {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || value < min || value > max) {
    throw new SettingError(`${name} must be an integer between ${min} and ${max}, got "${raw}"`);
  }
  return value;
}

function boolean(env: NodeJS.ProcessEnv, name: string): boolean | undefined {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return undefined;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new SettingError(`${name} must be true or false, got "${env[name]}"`);
}

function dnsServers(env: NodeJS.ProcessEnv): string[] | undefined {
  const raw = env.DNS_SERVERS;
  if (raw === undefined || raw.trim() === '') return undefined;
  const servers = raw.split(',').map((server) => server.trim());
  try {
    if (servers.includes('')) throw new Error('empty entry');
    new dnsPromises.Resolver().setServers(servers);
  } catch {
    throw new SettingError(
      `DNS_SERVERS must be comma-separated host or host:port entries, got "${raw}"`,
    );
  }
  return servers;
}

/**
 * SANDBOX_PORT (default `defaultPort`), SANDBOX_HOST, SANDBOX_REPOSITORIES,
 * SANDBOX_MAX_PAGE_SIZE, SANDBOX_FAULTS, SANDBOX_CACHE_CONTROL, and the DNS_SERVERS and DNS_TIMEOUT_MS the facade reads
 * too, so that both ask the same resolvers. Throws a SettingError for a bad value.
 */
export function readSandboxOptions(env: NodeJS.ProcessEnv, defaultPort: number): SandboxOptions {
  const host = env.SANDBOX_HOST;
  if (host !== undefined && host.trim() === '')
    throw new SettingError('SANDBOX_HOST must not be empty');
  return {
    port: integer(env, 'SANDBOX_PORT', 0, 65535) ?? defaultPort,
    host: host?.trim() ?? '127.0.0.1',
    repositories: integer(env, 'SANDBOX_REPOSITORIES', 0, 1_000_000),
    maxPageSize: integer(env, 'SANDBOX_MAX_PAGE_SIZE', 1, 1_000_000),
    faults: boolean(env, 'SANDBOX_FAULTS'),
    dnsServers: dnsServers(env),
    dnsTimeoutMs: integer(env, 'DNS_TIMEOUT_MS', 1, 600_000),
    ...(env.SANDBOX_CACHE_CONTROL?.trim()
      ? { repositoryCacheControl: env.SANDBOX_CACHE_CONTROL.trim() }
      : {}),
  };
}
