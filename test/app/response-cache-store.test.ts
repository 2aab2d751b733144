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
    store.set('s:none', { data: { text: 'x' } }, 0);
    store.set(
      's:no-store',
      { data: { text: 'x' }, [ANSWER_POLICY]: NO_STORE } as ExecutionResult,
      0,
    );
    store.set('s:error', { ...answer('x'), errors: [new GraphQLError('x')] }, 0);
    expect(store.empty).toBe(true);

    const kept = answer('x');
    store.set('s:a', kept, 0);
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
    store.set('s:a', answer('x'), 0);
    store.set('s:b', answer('x'), 0);
    store.get('s:a');
    store.set('s:c', answer('x'), 0);
    expect(store.get('s:b')).toBeNull();
    expect(store.get('s:a')).not.toBeNull();
    expect(store.get('s:c')).not.toBeNull();
    store.set('s:big', answer('x'.repeat(size * 2)), 0);
    expect(store.get('s:big')).toBeNull();
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
