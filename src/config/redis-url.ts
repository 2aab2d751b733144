// REDIS_URL's forms are Apollo Router's: one server, a Cluster from its seed nodes, or the master
// that sentinels name. WHATWG's URL cannot hold several hosts, so the seeds are parsed here.

export interface RedisNodeAddress {
  host: string;
  port: number;
}

interface Credentials {
  username?: string | undefined;
  password?: string | undefined;
  tls: boolean;
}

/** What REDIS_URL names, in the terms of ioredis's options. */
export type RedisTarget =
  | ({ kind: 'server'; url: string } & Credentials)
  | ({ kind: 'cluster'; nodes: RedisNodeAddress[] } & Credentials)
  | ({
      kind: 'sentinel';
      sentinels: RedisNodeAddress[];
      /** sentinelServiceName: the master's name, as the sentinels know it. */
      name: string;
      db: number;
      sentinelUsername?: string | undefined;
      sentinelPassword?: string | undefined;
    } & Credentials);

/** Why a REDIS_URL is refused, for its one line on stderr. */
export class RedisUrlError extends Error {}

const FORM =
  /^(rediss?)(?:-(cluster|sentinel))?:\/\/(?:([^:@/?#]*)(?::([^@/?#]*))?@)?([^@/?#]+)(?:\/(\d*))?(?:\?([^#]*))?$/i;
const NODE = /^(?:\[([0-9a-f:.]+)\]|([A-Za-z0-9._-]+))(?::(\d{1,5}))?$/i;
const FORMS =
  'must be redis://, rediss://, redis-cluster://host:port[,host:port…], rediss-cluster://, redis-sentinel://host:port[,host:port…]?sentinelServiceName=NAME or rediss-sentinel://';

function decoded(value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined;
  try {
    return decodeURIComponent(value);
  } catch {
    throw new RedisUrlError('has a user name or password that is not percent-encoded');
  }
}

function nodes(list: string, defaultPort: number): RedisNodeAddress[] {
  return list.split(',').map((entry) => {
    const node = NODE.exec(entry.trim());
    const port = Number(node?.[3] ?? defaultPort);
    if (!node || port < 1 || port > 65_535)
      throw new RedisUrlError(`has "${entry}" where a host:port (port 1-65535) belongs`);
    return { host: (node[1] ?? node[2]) as string, port };
  });
}

/** Throws a RedisUrlError whose message reads after the variable's name. */
export function parseRedisUrl(url: string): RedisTarget {
  const form = FORM.exec(url.trim());
  if (!form) throw new RedisUrlError(FORMS);
  const [, scheme = '', mode, user, secret, list = '', db, query = ''] = form;
  const credentials = {
    username: decoded(user),
    password: decoded(secret),
    tls: scheme.toLowerCase() === 'rediss',
  };
  const params = new URLSearchParams(query);
  if (mode === undefined) {
    if (list.includes(',')) throw new RedisUrlError(`names one server; ${FORMS}`);
    nodes(list, 6379);
    return { kind: 'server', url: url.trim(), ...credentials };
  }
  if (mode.toLowerCase() === 'cluster') {
    if (db) throw new RedisUrlError('names a database, which a Redis Cluster does not have');
    return { kind: 'cluster', nodes: nodes(list, 6379), ...credentials };
  }
  const name = params.get('sentinelServiceName');
  if (!name) throw new RedisUrlError('needs ?sentinelServiceName=<the master sentinels name>');
  return {
    kind: 'sentinel',
    sentinels: nodes(list, 26379),
    name,
    db: Number(db || 0),
    sentinelUsername: params.get('sentinelUsername') ?? undefined,
    sentinelPassword: params.get('sentinelPassword') ?? undefined,
    ...credentials,
  };
}

/** Scheme and hosts, for the log: never the password. */
export function redisWhere(url: string): string {
  const form = FORM.exec(url.trim());
  return form ? `${form[1]}${form[2] ? `-${form[2]}` : ''}://${form[5]}`.toLowerCase() : 'redis';
}

/** Every spelling of the password a library may quote. */
export function redisSecrets(url: string): string[] {
  const form = FORM.exec(url.trim());
  const sentinel = new URLSearchParams(form?.[7] ?? '').get('sentinelPassword');
  const raw = form?.[4];
  let plain: string | undefined;
  try {
    plain = raw && decodeURIComponent(raw);
  } catch {}
  return [raw, plain, sentinel ?? undefined].filter((secret): secret is string => !!secret);
}
