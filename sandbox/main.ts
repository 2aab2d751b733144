import { promises as dnsPromises } from 'node:dns';
import { type SandboxOptions, startSandbox } from './server.js';

class SettingError extends Error {}

function integer(name: string, min: number, max: number): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || value < min || value > max) {
    throw new SettingError(`${name} must be an integer between ${min} and ${max}, got "${raw}"`);
  }
  return value;
}

function boolean(name: string): boolean | undefined {
  const raw = process.env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return undefined;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new SettingError(`${name} must be true or false, got "${process.env[name]}"`);
}

function dnsServers(): string[] | undefined {
  const raw = process.env.DNS_SERVERS;
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

function readOptions(): SandboxOptions {
  const host = process.env.SANDBOX_HOST;
  if (host !== undefined && host.trim() === '')
    throw new SettingError('SANDBOX_HOST must not be empty');
  return {
    port: integer('SANDBOX_PORT', 0, 65535) ?? 4010,
    host: host?.trim() ?? '127.0.0.1',
    repositories: integer('SANDBOX_REPOSITORIES', 0, 1_000_000),
    maxPageSize: integer('SANDBOX_MAX_PAGE_SIZE', 1, 1_000_000),
    faults: boolean('SANDBOX_FAULTS'),
    dnsServers: dnsServers(),
    dnsTimeoutMs: integer('DNS_TIMEOUT_MS', 1, 600_000),
  };
}

async function main(): Promise<void> {
  let options: SandboxOptions;
  try {
    options = readOptions();
  } catch (error) {
    if (!(error instanceof SettingError)) throw error;
    process.stderr.write(`sandbox: ${error.message}\n`);
    process.exit(1);
  }

  const sandbox = await startSandbox(options).catch((error: unknown) => {
    const reason = error instanceof Error ? error.message : String(error);
    process.stderr.write(`sandbox: cannot listen on ${options.host}:${options.port}: ${reason}\n`);
    process.exit(1);
  });
  process.stdout.write(`sandbox listening on ${sandbox.url}\n`);

  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    sandbox.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

await main();
