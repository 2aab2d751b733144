import { afterEach, describe, expect, it, vi } from 'vitest';
import { createRefreshes } from '../../src/read/refresh.js';

/** A refresh that ends when the test says so, and records the signal it was given. */
function pending() {
  let finish: () => void = () => {};
  let fail: (error: Error) => void = () => {};
  const seen: { signal?: AbortSignal } = {};
  const refresh = (signal: AbortSignal) => {
    seen.signal = signal;
    return new Promise<void>((resolve, reject) => {
      finish = resolve;
      fail = reject;
      signal.addEventListener('abort', () => reject(signal.reason), { once: true });
    });
  };
  return { refresh, seen, finish: () => finish(), fail: (error: Error) => fail(error) };
}

describe('createRefreshes', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('tells each refresh’s end by route, and swallows a failure', async () => {
    const ends: string[] = [];
    const refreshes = createRefreshes({
      onEnd: (route, outcome) => ends.push(`${route} ${outcome}`),
    });
    const ok = pending();
    const failing = pending();
    refreshes.start('a', 'GET /a', ok.refresh);
    refreshes.start('b', 'GET /b', failing.refresh);
    expect(refreshes.running).toBe(2);
    ok.finish();
    failing.fail(new Error('upstream down'));
    await refreshes.drain(1000);
    expect(ends.sort()).toEqual(['GET /a ok', 'GET /b failed']);
    expect(refreshes.running).toBe(0);
  });

  it('ends a failed refresh quietly when no one is told of it', async () => {
    const unhandled = vi.fn();
    process.on('unhandledRejection', unhandled);
    try {
      const refreshes = createRefreshes();
      refreshes.start('a', 'GET /a', () => Promise.reject(new Error('upstream down')));
      await refreshes.drain(1000);
      await new Promise((resolve) => setTimeout(resolve, 10));
      expect(unhandled).not.toHaveBeenCalled();
    } finally {
      process.off('unhandledRejection', unhandled);
    }
  });

  it('runs one refresh per key at a time, and another once it has ended', async () => {
    const refreshes = createRefreshes();
    const first = pending();
    const again = vi.fn(() => Promise.resolve());
    refreshes.start('a', 'GET /a', first.refresh);
    refreshes.start('a', 'GET /a', again);
    expect(again).not.toHaveBeenCalled();
    expect(refreshes.running).toBe(1);
    first.finish();
    await vi.waitFor(() => expect(refreshes.running).toBe(0));
    refreshes.start('a', 'GET /a', again);
    expect(again).toHaveBeenCalledTimes(1);
  });

  it('waits on drain for the refreshes that end within the grace, aborting none', async () => {
    const refreshes = createRefreshes();
    const running = pending();
    refreshes.start('a', 'GET /a', running.refresh);
    setTimeout(running.finish, 10);
    await refreshes.drain(5000);
    expect(running.seen.signal?.aborted).toBe(false);
    expect(refreshes.running).toBe(0);
  });

  it('aborts on drain the refreshes still running after the grace, and resolves once they end', async () => {
    const ends: string[] = [];
    const refreshes = createRefreshes({ onEnd: (_route, outcome) => ends.push(outcome) });
    const slow = pending();
    refreshes.start('a', 'GET /a', slow.refresh);
    await refreshes.drain(20);
    expect(slow.seen.signal?.aborted).toBe(true);
    expect(ends).toEqual(['failed']);
  });

  it('resolves the drain only once the refreshes it aborted have ended', async () => {
    const ends: string[] = [];
    const refreshes = createRefreshes({ onEnd: (_route, outcome) => ends.push(outcome) });
    // An aborted call still takes a moment to end: its socket closes, its finally blocks run.
    refreshes.start(
      'a',
      'GET /a',
      (signal) =>
        new Promise<void>((_resolve, reject) => {
          signal.addEventListener('abort', () => setTimeout(() => reject(signal.reason), 50), {
            once: true,
          });
        }),
    );
    await refreshes.drain(10);
    expect(ends).toEqual(['failed']);
    expect(refreshes.running).toBe(0);
  });

  it('starts nothing once draining, and leaves no timer behind', async () => {
    vi.useFakeTimers();
    const refreshes = createRefreshes();
    await refreshes.drain(60_000);
    expect(vi.getTimerCount()).toBe(0);
    const late = vi.fn(() => Promise.resolve());
    refreshes.start('a', 'GET /a', late);
    expect(late).not.toHaveBeenCalled();
    expect(refreshes.running).toBe(0);
  });
});
