import { GraphQLError, Source } from 'graphql';
import { describe, expect, it, vi } from 'vitest';
import {
  BadUserInputError,
  boundMessage,
  codeForStatus,
  FacadeError,
  MAX_RETRY_AFTER_S,
  maskError,
  parseRetryAfter,
  truncate,
  upstreamHttpError,
} from '../../src/errors.js';

describe('truncate', () => {
  it('keeps a text of exactly the bound as it is', () => {
    expect(truncate('abc', 3)).toBe('abc');
  });

  it('cuts a longer text and says how much was left out', () => {
    expect(truncate('abcdef', 2)).toBe('ab… (4 more characters)');
  });
});

describe('boundMessage', () => {
  it('cuts each long quoted part to 64 characters', () => {
    const quoted = 'x'.repeat(100);
    expect(boundMessage(`Variable "$a" got invalid value "${quoted}"; expected a number`)).toBe(
      `Variable "$a" got invalid value "${'x'.repeat(64)}…"; expected a number`,
    );
  });

  it('leaves a quoted part of 64 characters whole', () => {
    const message = `got "${'x'.repeat(64)}"`;
    expect(boundMessage(message)).toBe(message);
  });

  it('cuts the whole message to 1000 characters', () => {
    expect(boundMessage('y'.repeat(1_005))).toBe(`${'y'.repeat(1_000)}… (5 more characters)`);
  });
});

describe('BadUserInputError', () => {
  const issues = (count: number) =>
    Array.from({ length: count }, (_, i) => ({ path: `input.ports[${i}]`, message: 'too big' }));

  it('names every issue when there are at most ten', () => {
    const error = new BadUserInputError(issues(10));
    expect(error.message).toBe(
      `Invalid input: ${issues(10)
        .map((issue) => `${issue.path}: too big`)
        .join('; ')}`,
    );
    expect(error.extensions).toStrictEqual({ code: 'BAD_USER_INPUT', issues: issues(10) });
  });

  it('names the first ten issues and counts the rest', () => {
    const error = new BadUserInputError(issues(12));
    expect(error.message).toMatch(/^Invalid input: input\.ports\[0\]: too big; /);
    expect(error.message).toMatch(/; input\.ports\[9\]: too big; and 2 more issues$/);
    expect(error.extensions).toStrictEqual({
      code: 'BAD_USER_INPUT',
      issues: issues(10),
      moreIssues: 2,
    });
  });
});

describe('codeForStatus', () => {
  it.each([
    [400, 'BAD_USER_INPUT'],
    [422, 'BAD_USER_INPUT'],
    [401, 'UNAUTHENTICATED'],
    [403, 'FORBIDDEN'],
    [404, 'NOT_FOUND'],
    [408, 'UPSTREAM_TIMEOUT'],
    [429, 'RATE_LIMITED'],
    [402, 'UPSTREAM_ERROR'],
    [500, 'UPSTREAM_ERROR'],
    [399, 'UPSTREAM_BAD_RESPONSE'],
    [200, 'UPSTREAM_BAD_RESPONSE'],
  ])('maps %i to %s', (status, code) => {
    expect(codeForStatus(status)).toBe(code);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2030-01-01T00:00:00Z');

  it('reads whole seconds, around spaces', () => {
    expect(parseRetryAfter('5', now)).toBe(5);
    expect(parseRetryAfter(' 5 ', now)).toBe(5);
  });

  it('reads an HTTP date as the seconds until it, rounded up', () => {
    expect(parseRetryAfter('Tue, 01 Jan 2030 00:00:10 GMT', now)).toBe(10);
    expect(parseRetryAfter('Tue, 01 Jan 2030 00:00:10 GMT', now + 9_500)).toBe(1);
  });

  it('reads a past date as no wait', () => {
    expect(parseRetryAfter('Mon, 31 Dec 2029 23:59:00 GMT', now)).toBe(0);
  });

  it(`bounds seconds and dates to ${MAX_RETRY_AFTER_S} s`, () => {
    expect(parseRetryAfter('99999', now)).toBe(MAX_RETRY_AFTER_S);
    expect(parseRetryAfter('Tue, 01 Jan 2999 00:00:00 GMT', now)).toBe(MAX_RETRY_AFTER_S);
  });

  it('ignores an absent value and one that is neither seconds nor a date', () => {
    for (const value of [undefined, '', 'soon', '12abc', 'abc12', '5 x']) {
      expect(parseRetryAfter(value, now)).toBeUndefined();
    }
  });
});

describe('upstreamHttpError', () => {
  it('carries the status, the message and the Retry-After of a 429', () => {
    const error = upstreamHttpError(429, 'slow down', '7');
    expect(error.code).toBe('RATE_LIMITED');
    expect(error.message).toBe('slow down');
    expect(error.extensions).toStrictEqual({
      code: 'RATE_LIMITED',
      upstream: { status: 429, message: 'slow down' },
      retryAfter: 7,
    });
  });

  it('carries no retryAfter on a 429 without a usable Retry-After', () => {
    expect(upstreamHttpError(429, 'slow down').extensions).toStrictEqual({
      code: 'RATE_LIMITED',
      upstream: { status: 429, message: 'slow down' },
    });
  });

  it('ignores Retry-After on any other status', () => {
    expect(upstreamHttpError(503, 'down', '7').extensions).toStrictEqual({
      code: 'UPSTREAM_ERROR',
      upstream: { status: 503, message: 'down' },
    });
  });
});

describe('maskError', () => {
  const masked = (error: unknown) => {
    const log = vi.fn();
    const result = maskError(error, log);
    return { result, log };
  };
  const expectInternal = (result: Error) => {
    expect(result).toBeInstanceOf(GraphQLError);
    expect(result.message).toBe('Internal server error');
    expect((result as GraphQLError).extensions).toStrictEqual({ code: 'INTERNAL_SERVER_ERROR' });
  };

  it('passes a FacadeError and a GraphQLError wrapping one', () => {
    const ours = new FacadeError('NOT_FOUND', 'gone');
    expect(masked(ours).result).toBe(ours);
    const located = new GraphQLError('gone', { originalError: ours, path: ['domain'] });
    expect(masked(located).result).toBe(located);
  });

  it('masks and logs a plain Error', () => {
    const error = new Error('boom at /src/x.ts');
    const { result, log } = masked(error);
    expectInternal(result);
    expect(log).toHaveBeenCalledWith(error);
  });

  it('masks an object that only says it is a GraphQLError', () => {
    const error = { name: 'GraphQLError', message: 'not one' };
    const { result, log } = masked(error);
    expectInternal(result);
    expect(log).toHaveBeenCalledWith(error);
  });

  it("masks a resolver's error and logs the error it wraps", () => {
    const cause = new Error('boom');
    const { result, log } = masked(new GraphQLError('boom', { originalError: cause }));
    expectInternal(result);
    expect(log).toHaveBeenCalledWith(cause);
    const located = masked(new GraphQLError('boom', { originalError: cause, path: ['domain'] }));
    expectInternal(located.result);
    expect(located.log).toHaveBeenCalledWith(cause);
  });

  it("masks graphql-js's own error once it has a path: execution reached it", () => {
    const error = new GraphQLError('Cannot return null for non-nullable field', {
      path: ['domain'],
    });
    const { result, log } = masked(error);
    expectInternal(result);
    expect(log).toHaveBeenCalledWith(error);
  });

  it("passes graphql-js's request errors, coded BAD_USER_INPUT and bounded", () => {
    const error = new GraphQLError(`Variable "$a" got invalid value ${'z'.repeat(1_100)}`, {
      extensions: { code: 'BAD_REQUEST' },
    });
    const { result, log } = masked(error);
    expect(result).toBe(error);
    expect(result.message).toBe(
      boundMessage(`Variable "$a" got invalid value ${'z'.repeat(1_100)}`),
    );
    expect(result.message).toHaveLength(1_000 + '… (132 more characters)'.length);
    expect(error.extensions.code).toBe('BAD_USER_INPUT');
    expect(log).not.toHaveBeenCalled();
  });

  it('keeps a code of the contract that a request error already has', () => {
    const error = new GraphQLError('Syntax Error', {
      extensions: { code: 'GRAPHQL_PARSE_FAILED' },
    });
    expect(masked(error).result.message).toBe('Syntax Error');
    expect(error.extensions.code).toBe('GRAPHQL_PARSE_FAILED');
  });

  it("drops the JSON parser's error and the 200 it would allow", () => {
    const http = { status: 400, spec: true };
    const error = new GraphQLError('POST body sent invalid JSON.', {
      extensions: { http, originalError: { message: 'Unexpected token s in "secret"' } },
    });
    masked(error);
    expect(error.extensions).toStrictEqual({
      http: { status: 400, spec: false },
      code: 'BAD_USER_INPUT',
    });
  });

  it('builds a coded, located copy of a variable error that has no extensions', () => {
    const source = new Source('query ($a: Int) { x(a: $a) }');
    const error = Object.assign(new Error('Variable "$a" got invalid value "x"'), {
      name: 'GraphQLError',
      source,
      positions: [7],
      extensions: undefined,
    });
    const { result, log } = masked(error);
    expect(result).toBeInstanceOf(FacadeError);
    expect(result.message).toBe('Variable "$a" got invalid value "x"');
    expect((result as FacadeError).extensions).toStrictEqual({ code: 'BAD_USER_INPUT' });
    expect((result as FacadeError).locations).toEqual([{ line: 1, column: 8 }]);
    expect(log).not.toHaveBeenCalled();
  });
});
