import { GraphQLError, type GraphQLErrorOptions } from 'graphql';

/** The codes of the error table (docs/operations.md#errors); `extensions.code` is one of them. */
export const ERROR_CODES = [
  'BAD_USER_INPUT',
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'NOT_FOUND',
  'RATE_LIMITED',
  'UPSTREAM_ERROR',
  'UPSTREAM_TIMEOUT',
  'UPSTREAM_UNAVAILABLE',
  'UPSTREAM_BAD_RESPONSE',
  'UPSTREAM_BUDGET_EXCEEDED',
  'PERSISTED_QUERY_NOT_FOUND',
  'PERSISTED_QUERY_ONLY',
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'INTERNAL_SERVER_ERROR',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

const CONTRACT_CODES = new Set<unknown>(ERROR_CODES);

/** What the client sees of an upstream failure; no status for a transport failure. */
interface UpstreamDetails {
  status?: number;
  message: string;
}

/** Every expected error: a GraphQLError, so it passes Yoga's masking (see maskError). */
export class FacadeError extends GraphQLError {
  readonly code: ErrorCode;

  constructor(
    code: ErrorCode,
    message: string,
    extensions: Record<string, unknown> = {},
    /** Where in the document, for an error found before execution. */
    options: Pick<GraphQLErrorOptions, 'nodes' | 'source' | 'positions'> = {},
  ) {
    super(message, { ...options, extensions: { code, ...extensions } });
    this.code = code;
  }
}

/** Cuts `text` to `max` characters, saying how much was left out. */
export function truncate(text: string, max: number): string {
  return text.length <= max
    ? text
    : `${text.slice(0, max)}… (${text.length - max} more characters)`;
}

// An answer must not carry back megabytes of what was sent: a quoted part of a message (graphql-js
// and Yoga quote the caller's values) keeps 64 characters, the message 1,000.
const MAX_MESSAGE = 1_000;
const LONG_QUOTED = /"((?:[^"\\]|\\.){64})(?:[^"\\]|\\.)+"/g;

/** A message fit to return or log when parts of it may be the caller's. */
export function boundMessage(message: string): string {
  return truncate(message.replace(LONG_QUOTED, '"$1…"'), MAX_MESSAGE);
}

export interface InputIssue {
  path: string;
  message: string;
}

// A list of thousands of bad items must not answer with one issue each.
const MAX_ISSUES = 10;

/** The facade's own validation failed; nothing was sent upstream. */
export class BadUserInputError extends FacadeError {
  constructor(issues: InputIssue[]) {
    const shown = issues.slice(0, MAX_ISSUES).map((issue) => ({
      path: truncate(issue.path, 200),
      message: boundMessage(issue.message),
    }));
    const more = issues.length - shown.length;
    const text = shown.map((issue) => `${issue.path}: ${issue.message}`).join('; ');
    super(
      'BAD_USER_INPUT',
      `Invalid input: ${text}${more > 0 ? `; and ${more} more issues` : ''}`,
      more > 0 ? { issues: shown, moreIssues: more } : { issues: shown },
    );
  }
}

/** An error caused by the upstream: its answer, its absence or its shape. */
export class UpstreamError extends FacadeError {
  readonly upstream: UpstreamDetails;
  /** The caller went away: this says nothing of the upstream. */
  cancelled = false;
  /** The connection failed whatever the status said (an answer cut off). */
  transportFault = false;

  constructor(
    code: ErrorCode,
    upstream: UpstreamDetails,
    extra: Record<string, unknown> = {},
    message = upstream.message,
  ) {
    super(code, message, { upstream, ...extra });
    this.upstream = upstream;
  }
}

/** The request would pass MAX_UPSTREAM_CALLS: this field was not fetched, or not finished. */
export class UpstreamBudgetError extends FacadeError {
  constructor(budget: number) {
    super(
      'UPSTREAM_BUDGET_EXCEEDED',
      `This request would cause more than MAX_UPSTREAM_CALLS=${budget} upstream calls; this field was not fetched`,
    );
  }
}

/** An unknown APQ hash or trusted-document id: HTTP 200, as clients of APQ expect. */
export function persistedQueryNotFound(): FacadeError {
  return new FacadeError('PERSISTED_QUERY_NOT_FOUND', 'PersistedQueryNotFound', {
    http: { status: 200 },
  });
}

const CODE_FOR_STATUS: Readonly<Record<number, ErrorCode>> = {
  400: 'BAD_USER_INPUT',
  422: 'BAD_USER_INPUT',
  401: 'UNAUTHENTICATED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  408: 'UPSTREAM_TIMEOUT',
  429: 'RATE_LIMITED',
};

/**
 * The one status -> code table: any other 4xx is the upstream refusing the facade, like a 5xx;
 * a 1xx or 3xx is a bad answer (redirects are not followed).
 */
export function codeForStatus(status: number): ErrorCode {
  return CODE_FOR_STATUS[status] ?? (status >= 400 ? 'UPSTREAM_ERROR' : 'UPSTREAM_BAD_RESPONSE');
}

/** The longest Retry-After passed on to clients and honoured by the retry sleep, in seconds. */
export const MAX_RETRY_AFTER_S = 3600;

/** Retry-After (seconds or an HTTP date) in whole seconds, at most MAX_RETRY_AFTER_S. */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Math.min(Number(trimmed), MAX_RETRY_AFTER_S);
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.min(Math.max(0, Math.ceil((date - now) / 1000)), MAX_RETRY_AFTER_S);
}

export function upstreamHttpError(
  status: number,
  message: string,
  retryAfterHeader?: string,
): UpstreamError {
  const code = codeForStatus(status);
  const retryAfter = code === 'RATE_LIMITED' ? parseRetryAfter(retryAfterHeader) : undefined;
  return new UpstreamError(
    code,
    { status, message },
    retryAfter === undefined ? {} : { retryAfter },
  );
}

/** ['input', 'ports', 1, 'port'] -> `input.ports[1].port`. */
export function formatPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out;
}

/** By name: an error of a second copy of graphql (ESM and CJS) fails instanceof. */
function isGraphQLError(error: unknown): error is GraphQLError {
  return error instanceof Error && error.name === 'GraphQLError';
}

/**
 * Yoga's masking: coded errors and graphql-js's pre-execution errors pass, with one of the table's
 * codes; anything else is logged and reaches the client as INTERNAL_SERVER_ERROR, nothing more.
 */
export function maskError(error: unknown, log: (error: unknown) => void): Error {
  if (isGraphQLError(error)) {
    if (error instanceof FacadeError || error.originalError instanceof FacadeError) return error;
    const fromGraphql = !error.originalError || isGraphQLError(error.originalError);
    if (fromGraphql && error.path === undefined) {
      const message = boundMessage(error.message);
      if (error.extensions) {
        const extensions = error.extensions as Record<string, unknown>;
        // The JSON parser's error quotes the body; Yoga keys its 400 to it, so keep that status.
        if ('originalError' in extensions) {
          delete extensions.originalError;
          const http = extensions.http as { spec?: boolean } | undefined;
          if (http) http.spec = false;
        }
        // Yoga's own request errors (REQUEST_ENTITY_TOO_LARGE, BAD_REQUEST) are about the request.
        if (!CONTRACT_CODES.has(extensions.code)) extensions.code = 'BAD_USER_INPUT';
        error.message = message;
        return error;
      }
      // graphql-jit's variable errors carry no extensions at all.
      return new FacadeError(
        'BAD_USER_INPUT',
        message,
        {},
        { nodes: error.nodes, source: error.source, positions: error.positions },
      );
    }
  }
  log(isGraphQLError(error) ? (error.originalError ?? error) : error);
  return new GraphQLError('Internal server error', {
    extensions: { code: 'INTERNAL_SERVER_ERROR' },
  });
}
