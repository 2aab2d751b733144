import type { Config } from '../config.js';
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

// The REST API's routes (docs/upstream.md), each declared once: what the client sends for an
// input, how it reads the answer, and how patiently. `UpstreamClient.send` takes any of them;
// adding a route is adding an entry here, never a method on the client.

/**
 * One REST route, called with `In` and answering `Out`.
 *
 * `method` and `path` name the route in metrics, spans, logs and the circuit breaker (one circuit
 * each), so `path` is a fixed template: what varies per call goes in `query` or `body`, never in
 * the path, or every value would be a series and a circuit of its own.
 */
export type Endpoint<In, Out> = EndpointShape<In, Out> &
  (
    | {
        method: 'GET';
        /**
         * Retried within the deadline on 429, 502, 503, 504 and an unreachable upstream
         * (`retryDelay` in responses.ts), at most UPSTREAM_RETRIES times.
         */
        retry: boolean;
      }
    | {
        method: 'POST' | 'PUT' | 'PATCH' | 'DELETE';
        /** A write is sent once: sent again behind the caller's back, it could happen twice. */
        retry: false;
      }
  );

interface EndpointShape<In, Out> {
  /** From the base URL's path on, without the query string, e.g. `/git/v1/repo`. */
  readonly path: string;
  /** The query parameters to send; an undefined value is not sent (the upstream's default). */
  readonly query?: (input: In) => Readonly<Record<string, string | number | undefined>>;
  /** The JSON body to send; none when absent. */
  readonly body?: (input: In) => unknown;
  /**
   * Checks a 2xx answer against the spec and shapes it (wire.ts): a mismatch is
   * UPSTREAM_BAD_RESPONSE. `null`: any 2xx is the answer, and its body is read but not parsed.
   */
  readonly decode: Decoder<Out> | null;
  /** The deadline of one call, all its attempts included: a key of the upstream settings. */
  readonly timeout: DeadlineSetting;
}

/** The upstream settings (config.ts) that are a call's deadline in milliseconds. */
export type DeadlineSetting = keyof Pick<Config['upstream'], 'timeoutMs' | 'devServerTimeoutMs'>;

/** What a list page asks for; an undefined limit or offset is not sent. */
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
