import { createHash } from 'node:crypto';
import { type Exchange, isPlainObject, json, type Reply, type Route } from './http-io.js';

interface PortMapping {
  port: number;
  targetPort: number;
}

interface DevServerRequest {
  devCommand: string | null;
  installCommand: string | null;
  repoId: string | null;
  repo: string | null;
  baseId: string | null;
  ports: PortMapping[];
}

const STRING_FIELDS = [
  'devCommand',
  'installCommand',
  'preDevCommandOnce',
  'baseId',
  'repoId',
  'computeClass',
  'domain',
  'repo',
  'gitRef',
] as const;
const DEV_SERVERS_PATH = '/ephemeral/v1/dev-servers';
const EXTERNAL_PORTS = new Set([443, 8081]);
const DEFAULT_PORTS: PortMapping[] = [{ port: 443, targetPort: 3000 }];

/** The spec's only documented error of these routes is 500 with `{response}`. */
const responseBody = (text: string) => ({ response: text });
const failure = (text: string): Reply => json(500, responseBody(text));

/**
 * POST /ephemeral/v1/dev-servers. Nothing is started: the sandbox remembers which
 * (account, repository) pairs were requested so `isNew` is true only the first time.
 */
export function createDevServerRoutes(): Route[] {
  const seen = new Set<string>();
  const request = (accountId: string, ctx: Exchange): Reply => {
    const parsed = parseRequest(ctx);
    if (typeof parsed === 'string') return failure(parsed);
    const key = `${accountId}\n${parsed.repoId ?? parsed.repo ?? parsed.baseId ?? ''}`;
    const isNew = !seen.has(key);
    seen.add(key);
    const slug = createHash('sha256').update(key).digest('hex').slice(0, 12);
    const exposed = new Set(parsed.ports.map((mapping) => mapping.port));
    // ephemeralUrl is nullable in the spec; null is what a server with no exposed port gets here.
    const ephemeralUrl = exposed.has(443)
      ? `https://${slug}.dev.invalid`
      : exposed.has(8081)
        ? `https://${slug}.dev.invalid:8081`
        : null;
    const body = {
      url: `https://${slug}.dev.invalid`,
      isNew,
      devCommandRunning: nonEmpty(parsed.devCommand),
      installCommandRunning: nonEmpty(parsed.installCommand),
      mcpEphemeralUrl: `https://${slug}.mcp.invalid`,
      ephemeralUrl,
    };
    return json(200, body);
  };
  return [{ method: 'POST', path: DEV_SERVERS_PATH, errorBody: responseBody, handle: request }];
}

function nonEmpty(value: string | null): boolean {
  return value !== null && value.trim() !== '';
}

/** The parsed request, or the reason it is rejected. Unknown fields are ignored. */
function parseRequest(ctx: Exchange): DevServerRequest | string {
  if (ctx.body === undefined) return 'A JSON request body is required';
  if (!ctx.bodyIsJson) return 'Request body is not valid JSON';
  const body = ctx.body;
  if (!isPlainObject(body)) return 'Request body must be a JSON object';

  for (const field of STRING_FIELDS) {
    const value = body[field];
    if (value !== undefined && value !== null && typeof value !== 'string') {
      return `${field} must be a string or null`;
    }
  }
  // Allowed compute classes beyond "high" and "low" are not shown, so any non-empty name passes.
  if (body.computeClass === '') return 'computeClass must not be empty';

  const timeout = body.timeout;
  if (timeout !== undefined && timeout !== null) {
    if (typeof timeout !== 'number' || !Number.isSafeInteger(timeout) || timeout < 0) {
      return 'timeout must be a non-negative integer (seconds) or null';
    }
  }

  const envVars = body.envVars;
  if (envVars !== undefined && envVars !== null) {
    if (!isPlainObject(envVars)) return 'envVars must be an object of strings or null';
    for (const [name, value] of Object.entries(envVars)) {
      if (typeof value !== 'string') return `envVars.${name} must be a string`;
    }
  }

  const ports = parsePorts(body.ports);
  if (typeof ports === 'string') return ports;

  const text = (field: string): string | null => {
    const value = body[field];
    return typeof value === 'string' ? value : null;
  };
  return {
    devCommand: text('devCommand'),
    installCommand: text('installCommand'),
    repoId: text('repoId'),
    repo: text('repo'),
    baseId: text('baseId'),
    ports,
  };
}

function parsePorts(value: unknown): PortMapping[] | string {
  // Omitted and null both mean "the default exposure" (spec rule 1); only [] exposes nothing.
  if (value === undefined || value === null) return DEFAULT_PORTS;
  if (!Array.isArray(value)) return 'ports must be an array of {port, targetPort} or null';
  const mappings: PortMapping[] = [];
  for (const [index, item] of value.entries()) {
    if (!isPlainObject(item)) return `ports[${index}] must be an object with port and targetPort`;
    const { port, targetPort } = item;
    if (typeof port !== 'number' || !EXTERNAL_PORTS.has(port)) {
      return `ports[${index}].port must be 8081 or 443 (only these external ports can be configured), got ${JSON.stringify(port)}`;
    }
    // "Any target port is allowed" is read as any valid TCP port number.
    if (
      typeof targetPort !== 'number' ||
      !Number.isInteger(targetPort) ||
      targetPort < 1 ||
      targetPort > 65535
    ) {
      return `ports[${index}].targetPort must be an integer between 1 and 65535, got ${JSON.stringify(targetPort)}`;
    }
    if (mappings.some((mapping) => mapping.port === port)) {
      return `ports[${index}].port ${port} is exposed more than once`;
    }
    mappings.push({ port, targetPort });
  }
  return mappings;
}
