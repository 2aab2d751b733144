import { BadUserInputError } from '../errors.js';
import { decodeRepositoryList, type RepositoryList } from './repository-list.js';
import {
  type Decoder,
  type WireDevServer,
  type WireDevServerRequest,
  type WireDomainVerification,
  wireDevServer,
  wireDomainVerification,
  zodDecoder,
} from './wire.js';

// The REST API's routes (docs/upstream.md): adding one is an entry here, never a method on the
// client (CONTRIBUTING.md#add-an-operation).

/**
 * `method` and `path` name the route in metrics, spans, logs and its circuit, so a value that
 * varies per call is a `{name}` that `params` fills, or goes in `query` or `body`.
 */
export type Endpoint<In, Out> = EndpointShape<In, Out> &
  (
    | {
        method: 'GET';
        /** Retried within the deadline, at most UPSTREAM_RETRIES times (`retryDelay`). */
        retry: boolean;
      }
    | {
        method: 'POST' | 'PUT' | 'PATCH' | 'DELETE';
        /** A write is sent once: sent again, it could happen twice. */
        retry: false;
      }
  );

interface EndpointShape<In, Out> {
  /** Under the base URL's path, no query string: `/git/v1/repo`, `/x/v1/items/{id}`. */
  readonly path: string;
  /** The value of each `{name}` of the path. */
  readonly params?: (input: In) => Readonly<Record<string, string>>;
  /** An undefined value is not sent: the upstream's default. */
  readonly query?: (input: In) => Readonly<Record<string, string | number | undefined>>;
  readonly body?: (input: In) => unknown;
  /** A mismatch is UPSTREAM_BAD_RESPONSE. `null`: any 2xx is the answer, its body not parsed. */
  readonly decode: Decoder<Out> | null;
  /** The deadline of one call, all its attempts included. */
  readonly timeout: DeadlineSetting;
}

/**
 * Each `{name}` as one percent-encoded segment; a value that cannot be one (empty, `.`, `..`, not
 * valid Unicode) is the caller's error, refused before any call.
 */
export function fillPath<In>(endpoint: EndpointShape<In, unknown>, input: In): string {
  if (!endpoint.path.includes('{')) return endpoint.path;
  const params = endpoint.params?.(input) ?? {};
  return endpoint.path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = params[name];
    // The template and its params disagree: a defect of the entry, not of the caller.
    if (value === undefined) throw new Error(`${endpoint.path}: no value for {${name}}`);
    if (value === '' || value === '.' || value === '..' || /\p{Cs}/u.test(value))
      throw new BadUserInputError([{ path: name, message: 'must be one path segment' }]);
    return encodeURIComponent(value);
  });
}

/** The upstream settings that are a call's deadline in milliseconds. */
export type DeadlineSetting = 'timeoutMs' | 'devServerTimeoutMs';

/** An undefined limit or offset is not sent. */
export interface PageQuery {
  limit?: number | undefined;
  offset?: number | undefined;
}

export const listRepositories: Endpoint<PageQuery, RepositoryList> = {
  method: 'GET',
  path: '/git/v1/repo',
  query: ({ limit, offset }) => ({ limit, offset }),
  decode: decodeRepositoryList,
  retry: true,
  timeout: 'timeoutMs',
};

/** The reads whose answers may be kept: the paths UPSTREAM_CACHE_MAX_AGE may name. */
export const CACHEABLE_PATHS: readonly string[] = [listRepositories.path];

export const createDomainVerification: Endpoint<{ domain: string }, WireDomainVerification> = {
  method: 'POST',
  path: '/domains/v1/verifications',
  body: ({ domain }) => ({ domain }),
  decode: zodDecoder(wireDomainVerification),
  retry: false,
  timeout: 'timeoutMs',
};

/** Resolves on any 2xx: the answer's body is not specified. */
export const verifyDomain: Endpoint<{ domain: string }, void> = {
  method: 'PUT',
  path: '/domains/v1/verifications',
  body: ({ domain }) => ({ domain }),
  decode: null,
  retry: false,
  timeout: 'timeoutMs',
};

export const requestDevServer: Endpoint<WireDevServerRequest, WireDevServer> = {
  method: 'POST',
  path: '/ephemeral/v1/dev-servers',
  body: (request) => request,
  decode: zodDecoder(wireDevServer),
  retry: false,
  // It starts machines: DEV_SERVER_TIMEOUT_MS rather than UPSTREAM_TIMEOUT_MS.
  timeout: 'devServerTimeoutMs',
};
