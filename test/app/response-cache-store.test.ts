import { type ExecutionResult, GraphQLError } from 'graphql';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ANSWER_POLICY } from '../../src/cache/hints.js';
import { NO_STORE } from '../../src/cache/policy.js';
import { createMemoryResponseStore } from '../../src/cache/response-store.js';

const answer = (text: string, maxAge = 30): ExecutionResult =>
  ({ data: { text }, [ANSWER_POLICY]: { maxAge, scope: 'PRIVATE' } }) as ExecutionResult;
const policyOf = (result: unknown) => (result as { [ANSWER_POLICY]?: unknown })[ANSWER_POLICY];

describe('createMemoryResponseStore', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('keeps only what a policy allows, as a copy, with the lifetime it has left', () => {
    vi.useFakeTimers({ now: 0 });
    const store = createMemoryResponseStore(1024);
    store.set('s:none', { data: { text: 'x' } }, [], Number.POSITIVE_INFINITY);
    store.set(
      's:no-store',
      { data: { text: 'x' }, [ANSWER_POLICY]: NO_STORE } as ExecutionResult,
      [],
      Infinity,
    );
    store.set('s:error', { ...answer('x'), errors: [new GraphQLError('x')] }, [], Infinity);
    expect(store.empty).toBe(true);

    const kept = answer('x');
    store.set('s:a', kept, [], Infinity);
    (kept.data as { text: string }).text = 'changed after';
    vi.setSystemTime(12_500);
    const hit = store.get('s:a') as ExecutionResult | null;
    expect(hit?.data).toEqual({ text: 'x' });
    expect(policyOf(hit)).toEqual({ maxAge: 17, scope: 'PRIVATE' });
    vi.setSystemTime(29_500);
    expect(store.get('s:a')).toBeNull();
    expect(store.empty).toBe(true);
  });

  it('stays within its bytes, least recently used out first', () => {
    const size = 's:a'.length + JSON.stringify({ data: { text: 'x' } }).length;
    const store = createMemoryResponseStore(size * 2);
    store.set('s:a', answer('x'), [], Infinity);
    store.set('s:b', answer('x'), [], Infinity);
    store.get('s:a');
    store.set('s:c', answer('x'), [], Infinity);
    expect(store.get('s:b')).toBeNull();
    expect(store.get('s:a')).not.toBeNull();
    expect(store.get('s:c')).not.toBeNull();
    store.set('s:big', answer('x'.repeat(size * 2)), [], Infinity);
    expect(store.get('s:big')).toBeNull();
  });

  it("evicts one session's answers and no other's", () => {
    const store = createMemoryResponseStore(1024);
    store.set('one:a', answer('x'), [], Infinity);
    store.set('one:b', answer('x'), [], Infinity);
    store.set('two:a', answer('x'), [], Infinity);
    store.evictSession('one');
    expect(store.get('one:a')).toBeNull();
    expect(store.get('one:b')).toBeNull();
    expect(store.get('two:a')).not.toBeNull();
  });
});
