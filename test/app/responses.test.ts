import { afterEach, describe, expect, it, vi } from 'vitest';
import { UpstreamError, upstreamHttpError } from '../../src/errors.js';
import { CircuitOpenError } from '../../src/upstream/breaker.js';
import {
  cancelledError,
  createRedact,
  cutOff,
  DeadlineError,
  errorMessage,
  isTooLarge,
  parseBody,
  retryDelay,
  toUpstreamError,
} from '../../src/upstream/responses.js';
import { WireMismatch } from '../../src/upstream/wire.js';

const noRedact = (text: string) => text;
const pending = { aborted: false };

describe('isTooLarge', () => {
  it("recognises undici's maxResponseSize refusal and nothing else", () => {
    expect(isTooLarge({ code: 'UND_ERR_RES_EXCEEDED_MAX_SIZE' })).toBe(true);
    expect(isTooLarge({ code: '' })).toBe(false);
    expect(isTooLarge({})).toBe(false);
    expect(isTooLarge(undefined)).toBe(false);
  });
});

describe('createRedact', () => {
  it('replaces a secret as it is and as a URL carries it', () => {
    const redact = createRedact(['k/ey+1']);
    expect(redact('key k/ey+1 in /x?key=k%2Fey%2B1')).toBe('key [redacted] in /x?key=[redacted]');
  });

  it('replaces the longer of two secrets first, whatever their order', () => {
    expect(createRedact(['abc', 'abcdef'])('abcdef abc')).toBe('[redacted] [redacted]');
    expect(createRedact(['abcdef', 'abc'])('abcdef abc')).toBe('[redacted] [redacted]');
  });

  it('leaves text alone when there is no secret', () => {
    expect(createRedact([undefined, ''])('no secret here')).toBe('no secret here');
  });
});

describe('errorMessage', () => {
  it("passes on the upstream's message, redacted, then bounded to 500 characters", () => {
    const redact = createRedact(['s3cret']);
    expect(errorMessage(400, JSON.stringify({ message: 'bad key s3cret' }), redact)).toBe(
      'bad key [redacted]',
    );
    expect(errorMessage(400, JSON.stringify({ response: 'x'.repeat(600) }), redact)).toBe(
      'x'.repeat(500),
    );
  });

  it('names only the status for a body that is not JSON or has no message', () => {
    expect(errorMessage(502, '<html>Bad gateway</html>', noRedact)).toBe(
      'The upstream answered 502',
    );
    expect(errorMessage(500, '{}', noRedact)).toBe('The upstream answered 500');
  });
});

describe('parseBody', () => {
  const anything = (json: unknown) => json;

  it('decodes an empty body as no value', () => {
    const decode = vi.fn(anything);
    expect(parseBody('', decode, 204, noRedact)).toBeUndefined();
    expect(decode).toHaveBeenCalledWith(undefined);
  });

  it('refuses a body that is not JSON with UPSTREAM_BAD_RESPONSE', () => {
    const decode = vi.fn(anything);
    expect(() => parseBody('<html>', decode, 200, noRedact)).toThrow(
      expect.objectContaining({
        code: 'UPSTREAM_BAD_RESPONSE',
        upstream: { status: 200, message: 'The upstream answered with a body that is not JSON' },
      }),
    );
    expect(decode).not.toHaveBeenCalled();
  });

  it('names the redacted path of the first field off the spec', () => {
    const decode = () => {
      throw new WireMismatch(['domains', 0, 'k3y'], 'Required');
    };
    expect(() => parseBody('{}', decode, 200, createRedact(['k3y']))).toThrow(
      expect.objectContaining({
        code: 'UPSTREAM_BAD_RESPONSE',
        upstream: {
          status: 200,
          message:
            "The upstream's answer does not match the spec at domains.0.[redacted]: Required",
        },
      }),
    );
  });

  it('names the body itself when the answer as a whole is off the spec', () => {
    const decode = () => {
      throw new WireMismatch([], 'Expected object');
    };
    expect(() => parseBody('[]', decode, 200, noRedact)).toThrow(
      "The upstream's answer does not match the spec at (body): Expected object",
    );
  });

  it("lets a decoder's other errors through", () => {
    const bug = new TypeError('bug');
    expect(() =>
      parseBody(
        '{}',
        () => {
          throw bug;
        },
        200,
        noRedact,
      ),
    ).toThrow(bug);
  });
});

describe('DeadlineError', () => {
  it('is named TimeoutError, as an AbortSignal.timeout() reason is', () => {
    expect(new DeadlineError().name).toBe('TimeoutError');
  });
});

describe('cancelledError', () => {
  it('is an UPSTREAM_UNAVAILABLE marked cancelled', () => {
    const error = cancelledError();
    expect(error.code).toBe('UPSTREAM_UNAVAILABLE');
    expect(error.message).toBe('The request was cancelled by the client');
    expect(error.cancelled).toBe(true);
  });
});

describe('toUpstreamError', () => {
  const expectError = (error: UpstreamError, code: string, message: string) => {
    expect(error).toBeInstanceOf(UpstreamError);
    expect(error.code).toBe(code);
    expect(error.upstream).toStrictEqual({ message });
  };

  it('passes an UpstreamError as it is', () => {
    const error = upstreamHttpError(404, 'gone');
    expect(toUpstreamError(error, pending, 1_000)).toBe(error);
  });

  it('answers cancelled when the client left, whatever undici threw', () => {
    const left = { aborted: true, reason: new Error('client left') };
    expect(toUpstreamError({ code: 'UND_ERR_HEADERS_TIMEOUT' }, left, 1_000).cancelled).toBe(true);
  });

  it('answers UPSTREAM_TIMEOUT when the deadline passed or undici timed out', () => {
    const late = { aborted: true, reason: new DeadlineError() };
    expectError(
      toUpstreamError(new Error('aborted'), late, 1_500),
      'UPSTREAM_TIMEOUT',
      'The upstream did not answer within 1500 ms',
    );
    for (const code of ['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT']) {
      expect(toUpstreamError({ code }, pending, 1_000).code).toBe('UPSTREAM_TIMEOUT');
    }
  });

  it('answers UPSTREAM_BAD_RESPONSE to an answer past the size bound', () => {
    expectError(
      toUpstreamError({ code: 'UND_ERR_RES_EXCEEDED_MAX_SIZE' }, pending, 1_000),
      'UPSTREAM_BAD_RESPONSE',
      "The upstream's answer exceeds UPSTREAM_MAX_RESPONSE_BYTES",
    );
  });

  it('answers a body shorter than its Content-Length as cut off', () => {
    const error = toUpstreamError({ code: 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH' }, pending, 1_000);
    expectError(error, 'UPSTREAM_BAD_RESPONSE', "The upstream's answer was cut off");
    expect(error.transportFault).toBe(true);
  });

  it('answers UPSTREAM_UNAVAILABLE to a call aborted by the pool', () => {
    for (const error of [{ code: 'UND_ERR_ABORTED' }, { name: 'AbortError' }]) {
      expectError(
        toUpstreamError(error, pending, 1_000),
        'UPSTREAM_UNAVAILABLE',
        'The upstream call was aborted',
      );
    }
  });

  it('answers UPSTREAM_UNAVAILABLE naming the connection failure', () => {
    expectError(
      toUpstreamError({ code: 'ECONNREFUSED' }, pending, 1_000),
      'UPSTREAM_UNAVAILABLE',
      'The upstream could not be reached (ECONNREFUSED)',
    );
    expectError(
      toUpstreamError(new Error('socket hang up'), pending, 1_000),
      'UPSTREAM_UNAVAILABLE',
      'The upstream could not be reached (connection failed)',
    );
  });
});

describe('cutOff', () => {
  it('is a transport fault, with the status when headers came', () => {
    const error = cutOff(200);
    expect(error.code).toBe('UPSTREAM_BAD_RESPONSE');
    expect(error.upstream).toStrictEqual({
      status: 200,
      message: "The upstream's answer was cut off",
    });
    expect(error.transportFault).toBe(true);
    expect(cutOff(undefined).upstream).toStrictEqual({
      message: "The upstream's answer was cut off",
    });
  });
});

describe('retryDelay', () => {
  afterEach(() => vi.restoreAllMocks());

  it('never retries a cancelled call or an open circuit', () => {
    expect(retryDelay(cancelledError(), 1)).toBeUndefined();
    expect(retryDelay(new CircuitOpenError(5_000), 1)).toBeUndefined();
  });

  it('retries a failed connection but not a timeout or a bad answer', () => {
    expect(retryDelay(toUpstreamError({ code: 'ECONNRESET' }, pending, 1_000), 1)).toBeTypeOf(
      'number',
    );
    expect(retryDelay(toUpstreamError({ code: 'ETIMEDOUT' }, pending, 1_000), 1)).toBeUndefined();
    expect(retryDelay(cutOff(undefined), 1)).toBeUndefined();
  });

  it('retries 429, 502, 503 and 504 only', () => {
    for (const status of [429, 502, 503, 504]) {
      expect(retryDelay(upstreamHttpError(status, 'x'), 1)).toBeTypeOf('number');
    }
    for (const status of [400, 404, 500, 501]) {
      expect(retryDelay(upstreamHttpError(status, 'x'), 1)).toBeUndefined();
    }
  });

  it("waits the upstream's Retry-After when it gave one", () => {
    expect(retryDelay(upstreamHttpError(429, 'x', '3'), 1)).toBe(3_000);
  });

  it('otherwise waits a random share of 100 ms doubled per attempt, at most 2 s', () => {
    vi.spyOn(Math, 'random').mockReturnValue(0.5);
    expect([1, 2, 3, 5, 6, 10].map((attempt) => retryDelay(cutOff(503), attempt))).toEqual([
      50, 100, 200, 800, 1_000, 1_000,
    ]);
  });
});
