import type { Config } from '../config/load.js';
import { redisSecrets } from '../config/redis-url.js';

/** A start-up failure the operator can act on: the message names the variable to change. */
export class StartupError extends Error {}

export const errorName = (error: unknown) => (error instanceof Error ? error.name : typeof error);

const LISTEN_REASONS: Record<string, string> = {
  EADDRINUSE: 'the port is already in use',
  EACCES: 'not permitted to listen on this port',
  EADDRNOTAVAIL: 'not an address of this machine',
  EAFNOSUPPORT: 'this machine does not support that address family',
  ENOTFOUND: 'the host name does not resolve',
  EAI_AGAIN: 'the host name could not be resolved now',
};
const PORT_CODES = new Set(['EADDRINUSE', 'EACCES']);

/** Why listen() failed, naming the variable that chose the port (or the host) and the reason. */
export function listenFailure(
  error: unknown,
  variables: { port: string; host: string },
  where: string,
): StartupError {
  const code = (error as { code?: unknown })?.code;
  const known = typeof code === 'string' && Object.hasOwn(LISTEN_REASONS, code);
  const variable = known && !PORT_CODES.has(code) ? variables.host : variables.port;
  const reason = known
    ? `${LISTEN_REASONS[code]} (${code})`
    : `listen failed (${String(code ?? errorName(error))})`;
  return new StartupError(`${variable}: cannot listen on ${where}: ${reason}`);
}

/** Every configured value that must never be printed, longest first. */
function configuredSecrets(config: Config): string[] {
  const redisUrl = config.rateLimit.redisUrl;
  const secrets = [
    config.upstream.apiKey,
    ...(config.clientTokens ?? []),
    config.debugToken,
    redisUrl,
    ...(redisUrl ? redisSecrets(redisUrl) : []),
    ...Object.values(config.tracing?.headers ?? {}),
  ];
  // A secret that contains another is blanked out whole.
  return secrets.filter((secret): secret is string => !!secret).sort((a, b) => b.length - a.length);
}

const MAX_LINE = 300;

/**
 * The one line for a failure nobody foresaw: secrets blanked out before the line is cut, so the
 * cut cannot leave part of a secret behind.
 */
export function unexpectedFailure(error: unknown, config: Config): string {
  const raw = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  let line = raw.split('\n')[0] ?? '';
  for (const secret of configuredSecrets(config)) line = line.split(secret).join('[redacted]');
  return `Cannot start: ${line.slice(0, MAX_LINE)}`;
}
