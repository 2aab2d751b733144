import { type ExecutionResult, GraphQLError } from 'graphql';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type Answer, createMemoryResponseStore } from '../../src/cache/response-store.js';
import { NO_STORE } from '../../src/upstream/cache-policy.js';

const MiB = 1024 * 1024;
const answer = (text: string, maxAge = 30): Answer => ({
  result: { data: { text } },
  policy: { maxAge, scope: 'PRIVATE' },
});
const policyOf = (result: unknown) => (result as { policy?: unknown } | null)?.policy;

describe('createMemoryResponseStore', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('keeps only what a policy allows, as a copy, with the lifetime it has left', () => {
    vi.useFakeTimers({ now: 0 });
    const store = createMemoryResponseStore(1024);
    store.set('s:none', { result: { data: { text: 'x' } } }, 0);
    store.set('s:no-store', { result: { data: { text: 'x' } }, policy: NO_STORE }, 0);
    store.set(
      's:error',
      { ...answer('x'), result: { data: { text: 'x' }, errors: [new GraphQLError('x')] } },
      0,
    );
    expect(store.empty).toBe(true);

    const kept = answer('x');
    store.set('s:a', kept, 0);
    (kept.result.data as { text: string }).text = 'changed after';
    vi.setSystemTime(12_500);
    const hit = store.get('s:a') as ExecutionResult | null;
    expect(hit?.data).toEqual({ text: 'x' });
    expect(policyOf(hit)).toEqual({ maxAge: 17, scope: 'PRIVATE' });
    vi.setSystemTime(29_500);
    expect(store.get('s:a')).toBeNull();
    expect(store.empty).toBe(true);
  });

  it('stays within its bound, the least recently used sessions out first', () => {
    const store = createMemoryResponseStore(64 * 1024);
    store.set('kept:a', answer('x'), 0);
    for (let n = 0; n < 1000; n++) {
      store.set(`s${n}:a`, answer('x'), 0);
      if (n % 10 === 0) store.get('kept:a');
    }
    expect(store.get('kept:a')).not.toBeNull();
    expect(store.get('s0:a')).toBeNull();
    expect(store.get('s999:a')).not.toBeNull();
    // An answer larger than a session's share is not kept.
    store.set('big:a', answer('x'.repeat(64 * 1024)), 0);
    expect(store.get('big:a')).toBeNull();
  });

  it("keeps one session within its share, its oldest answers first, and others' answers", () => {
    // A share is an eighth of the bound, and at least 1 MiB.
    const store = createMemoryResponseStore(16 * MiB);
    store.set('other:a', answer('x'), 0);
    const text = 'x'.repeat(1000);
    for (let n = 0; n < 10_000; n++) {
      store.set(`one:${n}`, answer(text), 0);
      if (n === 5000) store.get('one:0');
    }
    expect(store.get('one:1')).toBeNull();
    expect(store.get('one:0')).toBeNull();
    expect(store.get('one:9999')).not.toBeNull();
    // About 2 MiB of answers: the rest of the bound is everyone else's.
    const kept = Array.from({ length: 10_000 }, (_, n) => store.get(`one:${n}`)).filter(Boolean);
    expect(kept.length).toBeGreaterThan(1000);
    expect(kept.length).toBeLessThan(2 * 1024);
    expect(store.get('other:a')).not.toBeNull();
  });

  it('keeps no answer read before its session was evicted', () => {
    vi.useFakeTimers({ now: 100_000 });
    const store = createMemoryResponseStore(MiB);
    store.evictSession('one');
    // Began before the mutation's eviction (or in the same millisecond), finished after it.
    store.set('one:a', answer('x'), 99_000);
    store.set('one:b', answer('x'), 100_000);
    expect(store.get('one:a')).toBeNull();
    expect(store.get('one:b')).toBeNull();
    // Another session's read is not the evicted session's.
    store.set('two:a', answer('x'), 99_000);
    expect(store.get('two:a')).not.toBeNull();
    vi.setSystemTime(100_001);
    store.set('one:c', answer('x'), 100_001);
    expect(store.get('one:c')).not.toBeNull();
  });

  it('refuses answers read before an eviction it no longer remembers, and no others', () => {
    vi.useFakeTimers({ now: 100_000 });
    // Room for a few eviction records only.
    const store = createMemoryResponseStore(64 * 1024);
    for (let n = 0; n < 100; n++) store.evictSession(`s${n}`);
    // Whether this session was among those pushed out is not known: its read in flight is refused.
    store.set('one:a', answer('x'), 99_000);
    expect(store.get('one:a')).toBeNull();
    vi.setSystemTime(100_001);
    store.set('one:a', answer('x'), 100_001);
    expect(store.get('one:a')).not.toBeNull();
  });

  it('refuses a read that began before an eviction, however long it ran', () => {
    vi.useFakeTimers({ now: 100_000 });
    const store = createMemoryResponseStore(MiB);
    store.evictSession('one');
    vi.setSystemTime(100_000 + 3_600_000);
    // The record may have expired: a read that began before it is refused all the same.
    store.set('one:a', answer('x'), 99_000);
    expect(store.get('one:a')).toBeNull();
  });

  it("evicts one session's answers and no other's", () => {
    const store = createMemoryResponseStore(1024);
    store.set('one:a', answer('x'), 0);
    store.set('one:b', answer('x'), 0);
    store.set('two:a', answer('x'), 0);
    store.evictSession('one');
    expect(store.get('one:a')).toBeNull();
    expect(store.get('one:b')).toBeNull();
    expect(store.get('two:a')).not.toBeNull();
  });
});
