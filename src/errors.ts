import { GraphQLError, type GraphQLErrorOptions } from 'graphql';

/** The codes of the contract's error table; `extensions.code` is always one of these. */
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

/** What the client may see of an upstream failure: its status (absent for transport failures) and message. */
export interface UpstreamDetails {
  status?: number;
  message: string;
}

/**
 * Base of every expected error. Extending GraphQLError is what lets these pass Yoga's masking
 * untouched, while anything else is masked to a generic INTERNAL_SERVER_ERROR.
 */
export class FacadeError extends GraphQLError {
  readonly code: ErrorCode;

  constructor(
    code: ErrorCode,
    message: string,
    extensions: Record<string, unknown> = {},
    /** Where in the document, for errors found before execution (a limit, say). */
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

// graphql-js and Yoga quote a caller's values in their messages (a variable's value, a parameter's
// name): each quoted part is cut, and the message as a whole, so an answer cannot be made to
// carry back megabytes of what was sent.
const MAX_MESSAGE = 1_000;
// Keeps the first 64 characters of a quoted part.
const LONG_QUOTED = /"((?:[^"\\]|\\.){64})(?:[^"\\]|\\.)+"/g;

/** A message fit to return or log when parts of it may be the caller's. */
export function boundMessage(message: string): string {
  return truncate(message.replace(LONG_QUOTED, '"$1…"'), MAX_MESSAGE);
}

export interface InputIssue {
  path: string;
  message: string;
}

// Enough to fix a request; a list of thousands of bad items must not answer with one issue each.
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

/** An error caused by the upstream (its answer, its absence or its shape). */
export class UpstreamError extends FacadeError {
  readonly upstream: UpstreamDetails;
  /** The GraphQL client went away: nobody reads this, and it says nothing of the upstream. */
  cancelled = false;
  /** The connection failed whatever the status said (an answer cut off): the upstream is unwell. */
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

/**
 * The request would cause more upstream calls than MAX_UPSTREAM_CALLS; this field was not fetched
 * (or not finished), and no call was spent on it past the budget.
 */
export class UpstreamBudgetError extends FacadeError {
  constructor(budget: number) {
    super(
      'UPSTREAM_BUDGET_EXCEEDED',
      `This request would cause more than MAX_UPSTREAM_CALLS=${budget} upstream calls; this field was not fetched`,
    );
  }
}

/**
 * A persisted document (an APQ hash, a trusted-document id) the facade does not know. HTTP 200,
 * as Apollo's protocol has it: clients read the code from the body and resend the document.
 */
export function persistedQueryNotFound(): FacadeError {
  return new FacadeError('PERSISTED_QUERY_NOT_FOUND', 'PersistedQueryNotFound', {
    http: { status: 200 },
  });
}

/** The one status -> code table of the contract. */
export function codeForStatus(status: number): ErrorCode {
  if (status === 400 || status === 422) return 'BAD_USER_INPUT';
  if (status === 401) return 'UNAUTHENTICATED';
  if (status === 403) return 'FORBIDDEN';
  if (status === 404) return 'NOT_FOUND';
  if (status === 429) return 'RATE_LIMITED';
  if (status === 408) return 'UPSTREAM_TIMEOUT';
  // Other 4xx (405, 409, 413, ...) are not the caller's input as far as the contract can tell: the
  // upstream refused the facade's request, which is an upstream error like a 5xx.
  if (status >= 400) return 'UPSTREAM_ERROR';
  // 1xx/3xx where JSON was expected: redirects are not followed on purpose.
  return 'UPSTREAM_BAD_RESPONSE';
}

/** The longest Retry-After passed on to clients and honoured by the retry sleep, in seconds. */
export const MAX_RETRY_AFTER_S = 3600;

/**
 * Parses Retry-After (seconds or an HTTP date) into whole seconds, if present, at most
 * MAX_RETRY_AFTER_S: an upstream's far-future date must not become a client's wait of years.
 */
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

/** Turns a validation path such as ['input', 'ports', 1, 'port'] into `input.ports[1].port`. */
export function formatPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out;
}

/** graphql-js's error, recognised by name: a second copy of graphql (ESM and CJS) fails instanceof. */
function isGraphQLError(error: unknown): error is GraphQLError {
  return error instanceof Error && error.name === 'GraphQLError';
}

/**
 * Yoga's masking: our coded errors and graphql-js's own pre-execution errors (bad variables) pass;
 * anything else is reported through `log` and reaches the client as a generic
 * INTERNAL_SERVER_ERROR, without its message or stack.
 */
export function maskError(error: unknown, log: (error: unknown) => void): Error {
  if (isGraphQLError(error)) {
    // Ours: it carries its code (and, when located, its path).
    if (error instanceof FacadeError || error.originalError instanceof FacadeError) return error;
    const fromGraphql = !error.originalError || isGraphQLError(error.originalError);
    if (fromGraphql && error.path === undefined) {
      const message = boundMessage(error.message);
      if (error.extensions) {
        const extensions = error.extensions as Record<string, unknown>;
        // Yoga attaches the JSON parser's own error, which quotes the body it could not parse.
        if ('originalError' in extensions) {
          delete extensions.originalError;
          // Yoga keys the 400 of an unparsable body to that error; without it, a client
          // accepting application/json would get 200 for a request the server could not read.
          const http = extensions.http as { spec?: boolean } | undefined;
          if (http) http.spec = false;
        }
        // Yoga's own request errors carry codes of their own (REQUEST_ENTITY_TOO_LARGE,
        // BAD_REQUEST); the contract promises one of its codes, and these are about the request.
        if (!CONTRACT_CODES.has(extensions.code)) extensions.code = 'BAD_USER_INPUT';
        error.message = message;
        return error;
      }
      // graphql-jit's variable errors carry no extensions object at all: build the coded copy.
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
