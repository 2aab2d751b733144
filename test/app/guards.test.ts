import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type UpstreamError, upstreamHttpError } from '../../src/errors.js';
import { createLogger } from '../../src/telemetry/logger.js';
import {
  type BreakerState,
  CircuitOpenError,
  createBreaker,
  createRouteBreakers,
} from '../../src/upstream/breaker.js';
import { CallBudget } from '../../src/upstream/budget.js';
import { cancelledError, cutOff } from '../../src/upstream/responses.js';

// The guards a redesign could drop without any answer changing at first sight: each test here
// fails when its guard is removed or loosened.

describe('createBreaker', () => {
  const COOLDOWN_MS = 5_000;
  let states: BreakerState[];
  let attempts: number;
  const failWith = (error: UpstreamError) => () => {
    attempts++;
    return Promise.reject(error);
  };
  const succeed = () => {
    attempts++;
    return Promise.resolve('ok');
  };
  const serverError = () => upstreamHttpError(503, 'down');
  const open = () => {
    const breaker = createBreaker(2, COOLDOWN_MS, (state) => states.push(state));
    return breaker;
  };

  beforeEach(() => {
    // cockatiel reads Date.now() for the cooldown: moving the clock replaces waiting for it.
    vi.useFakeTimers({ toFake: ['Date'] });
    states = [];
    attempts = 0;
  });
  afterEach(() => vi.useRealTimers());

  async function tripped() {
    const breaker = open();
    for (let i = 0; i < 2; i++)
      await expect(breaker.run(failWith(serverError()))).rejects.toThrow();
    expect(states).toEqual(['open']);
    attempts = 0;
    return breaker;
  }

  it('opens after consecutive upstream faults and then fails fast, with no attempt', async () => {
    const breaker = await tripped();
    await expect(breaker.run(succeed)).rejects.toBeInstanceOf(CircuitOpenError);
    expect(attempts).toBe(0);
  });

  it('does not count a 4xx or a cancelled call as a fault of the upstream', async () => {
    const breaker = open();
    for (const status of [400, 401, 404, 409, 429]) {
      await expect(breaker.run(failWith(upstreamHttpError(status, 'no')))).rejects.toThrow();
    }
    for (let i = 0; i < 3; i++)
      await expect(breaker.run(failWith(cancelledError()))).rejects.toThrow();
    expect(states).toEqual([]);
    await expect(breaker.run(succeed)).resolves.toBe('ok');
  });

  it('closes after the cooldown when the trial call succeeds', async () => {
    const breaker = await tripped();
    vi.setSystemTime(Date.now() + COOLDOWN_MS + 1);
    await expect(breaker.run(succeed)).resolves.toBe('ok');
    expect(states).toEqual(['open', 'half_open', 'closed']);
    await expect(breaker.run(succeed)).resolves.toBe('ok');
    expect(attempts).toBe(2);
  });

  it('reopens when the trial call fails', async () => {
    const breaker = await tripped();
    vi.setSystemTime(Date.now() + COOLDOWN_MS + 1);
    await expect(breaker.run(failWith(serverError()))).rejects.toThrow('down');
    expect(states).toEqual(['open', 'half_open', 'open']);
    await expect(breaker.run(succeed)).rejects.toBeInstanceOf(CircuitOpenError);
    expect(attempts).toBe(1);
  });

  it('stays open when the trial call is cancelled: a caller who left proves nothing', async () => {
    const breaker = await tripped();
    vi.setSystemTime(Date.now() + COOLDOWN_MS + 1);
    await expect(breaker.run(failWith(cancelledError()))).rejects.toThrow();
    expect(states).not.toContain('closed');
    await expect(breaker.run(succeed)).rejects.toBeInstanceOf(CircuitOpenError);
    expect(attempts).toBe(1);
  });

  it('never opens with a threshold of 0', async () => {
    const breaker = createBreaker(0, COOLDOWN_MS, (state) => states.push(state));
    for (let i = 0; i < 10; i++)
      await expect(breaker.run(failWith(serverError()))).rejects.toThrow();
    await expect(breaker.run(succeed)).resolves.toBe('ok');
    expect(states).toEqual([]);
  });

  it('counts a 500 and an answer cut off as faults, whatever the status of the latter', async () => {
    const breaker = open();
    await expect(breaker.run(failWith(upstreamHttpError(500, 'down')))).rejects.toThrow();
    await expect(breaker.run(failWith(cutOff(200)))).rejects.toThrow();
    expect(states).toEqual(['open']);
  });

  it('closes when the trial call gets a 4xx: the upstream answered', async () => {
    const breaker = await tripped();
    vi.setSystemTime(Date.now() + COOLDOWN_MS + 1);
    await expect(breaker.run(failWith(upstreamHttpError(404, 'gone')))).rejects.toThrow('gone');
    expect(states).toEqual(['open', 'half_open', 'closed']);
  });

  it('names the pause in whole seconds, rounded up', async () => {
    const breaker = createBreaker(1, 1_500);
    await expect(breaker.run(failWith(serverError()))).rejects.toThrow('down');
    await expect(breaker.run(succeed)).rejects.toThrow(
      'The upstream keeps failing; calls are paused for up to 2 s',
    );
  });
});

describe('createRouteBreakers', () => {
  const fail = () => Promise.reject(upstreamHttpError(503, 'down'));
  const succeed = () => Promise.resolve('ok');

  it('opens the circuit of the failing route only', async () => {
    const changes: string[] = [];
    const breakers = createRouteBreakers(1, 60_000, (state, route) =>
      changes.push(`${route} ${state}`),
    );
    await expect(breakers.run('GET /a', fail)).rejects.toThrow('down');
    await expect(breakers.run('GET /a', succeed)).rejects.toBeInstanceOf(CircuitOpenError);
    await expect(breakers.run('GET /b', succeed)).resolves.toBe('ok');
    expect(changes).toEqual(['GET /a open']);
  });
});

describe('CallBudget', () => {
  it('gives a reservation its units and takes them from the request', () => {
    const budget = new CallBudget(5);
    const reservation = budget.reserve(3);
    expect(reservation?.left).toBe(3);
    expect(budget.left).toBe(2);
    expect(budget.reserve(3)).toBeUndefined();
    expect(budget.left).toBe(2);
  });

  it('returns the units a reservation did not use when it is released', () => {
    const budget = new CallBudget(5);
    const reservation = budget.reserve(3) as CallBudget;
    reservation.take();
    reservation.release();
    expect(budget.left).toBe(4);
    expect(reservation.left).toBe(0);
    // Released twice, nothing more comes back.
    reservation.release();
    expect(budget.left).toBe(4);
  });

  it('extends a reservation from the request only while units are left', () => {
    const budget = new CallBudget(4);
    const reservation = budget.reserve(2) as CallBudget;
    expect(reservation.extend(2)).toBe(true);
    expect(budget.left).toBe(0);
    expect(reservation.extend(1)).toBe(false);
    expect(reservation.left).toBe(4);
  });

  it('refuses a call past the last unit with UPSTREAM_BUDGET_EXCEEDED naming the limit', () => {
    const budget = new CallBudget(1);
    budget.take();
    expect(() => budget.take()).toThrow(/MAX_UPSTREAM_CALLS=1/);
  });
});

describe('log redaction', () => {
  it('never writes a credential, whatever object carries it', () => {
    const lines: string[] = [];
    const logger = createLogger('info', { write: (line: string) => lines.push(line) });
    logger.info(
      {
        authorization: 'Bearer secret-one',
        cookie: 'session=secret-two',
        token: 'secret-three',
        apiKey: 'secret-four',
        headers: { authorization: 'Bearer secret-five', cookie: 'secret-six' },
        req: { headers: { authorization: 'Bearer secret-seven', cookie: 'secret-eight' } },
      },
      'with credentials',
    );
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toMatch(/secret-/);
    expect(JSON.parse(lines[0] as string)).toMatchObject({
      authorization: '[redacted]',
      headers: { authorization: '[redacted]', cookie: '[redacted]' },
      req: { headers: { authorization: '[redacted]' } },
    });
  });
});
