import { afterEach, describe, expect, it, vi } from 'vitest';
import { heapBytes, stringBytes } from '../../src/cache/heap.js';
import {
  type Answer,
  createMemoryResponseStore,
  type KeptAnswer,
  type ResponseStore,
} from '../../src/cache/response-store.js';

const MiB = 1024 * 1024;
const answer = (text: string, maxAge = 30): Answer => ({
  result: { data: { text } },
  policy: { maxAge, scope: 'PRIVATE' },
});
const textOf = (kept: KeptAnswer | null) => (kept?.data as { text?: string } | undefined)?.text;
/** The memory store answers at once. */
const read = (store: ResponseStore, key: string) => store.get(key) as KeptAnswer | null;

describe('createMemoryResponseStore', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('serves the text it kept and a copy of the extensions', () => {
    const store = createMemoryResponseStore(MiB);
    expect(store.kind).toBe('memory');
    const extensions = { trace: { id: 1 } };
    store.set('s:a', { ...answer('x'), result: { data: { text: 'x' }, extensions } }, 0);
    store.set('s:b', answer('y'), 0);
    expect(store.empty).toBe(false);
    extensions.trace.id = 2;
    const hit = read(store, 's:a');
    expect(hit?.stringify()).toBe('{"data":{"text":"x"},"extensions":{"trace":{"id":1}}}');
    expect(hit?.extensions).toEqual({ trace: { id: 1 } });
    expect(read(store, 's:b')?.extensions).toBeUndefined();
  });

  it('keeps an answer of one second, and serves it while a whole second is left', () => {
    vi.useFakeTimers({ now: 0 });
    const store = createMemoryResponseStore(MiB);
    store.set('s:one', answer('x', 1), 0);
    expect(read(store, 's:one')?.policy).toEqual({ maxAge: 1, scope: 'PRIVATE' });
    store.set('s:a', answer('x'), 0);
    vi.setSystemTime(29_000);
    expect(read(store, 's:a')?.policy).toEqual({ maxAge: 1, scope: 'PRIVATE' });
  });

  it("evicts one session's answers and no other's, whatever room is left", () => {
    const store = createMemoryResponseStore(MiB);
    store.set('one:a', answer('x'), 0);
    store.set('one:b', answer('x'), 0);
    store.set('two:a', answer('x'), 0);
    store.evictSession('one');
    expect(read(store, 'one:a')).toBeNull();
    expect(read(store, 'one:b')).toBeNull();
    expect(read(store, 'two:a')).not.toBeNull();
  });

  it('replaces the answer kept under the same key, counting it once', () => {
    const store = createMemoryResponseStore(MiB);
    store.set('one:first', answer('x'), 0);
    for (let n = 0; n < 2000; n++) store.set('one:a', answer(`${n}`.padEnd(1000, 'x')), 0);
    expect(textOf(read(store, 'one:a'))).toMatch(/^1999x/);
    expect(read(store, 'one:first')).not.toBeNull();
  });

  it('takes a replaced answer as the most recent of its session', () => {
    // Answers of about a tenth of a session's share.
    const store = createMemoryResponseStore(MiB);
    const text = 'x'.repeat(90 * 1024);
    store.set('one:a', answer(text), 0);
    store.set('one:b', answer(text), 0);
    store.set('one:a', answer(text), 0);
    for (let n = 0; n < 9; n++) store.set(`one:${n}`, answer(text), 0);
    expect(read(store, 'one:b')).toBeNull();
    expect(read(store, 'one:a')).not.toBeNull();
  });

  it("counts an answer's key and extensions against its session's share", () => {
    const store = createMemoryResponseStore(64 * 1024);
    store.set('one:small', answer('x'), 0);
    store.set(`one:${'k'.repeat(64 * 1024)}`, answer('x'), 0);
    expect(store.get(`one:${'k'.repeat(64 * 1024)}`)).toBeNull();
    // Its text and its extensions each fit in the share; both together do not.
    const extensions = { big: 'e'.repeat(40 * 1024) };
    store.set('one:ext', { ...answer('x'), result: { data: { text: 'x' }, extensions } }, 0);
    expect(read(store, 'one:ext')).toBeNull();
    // Refused on their own, they leave the session's other answers be.
    expect(read(store, 'one:small')).not.toBeNull();
  });

  it('frees what an expired answer held once it is read', () => {
    vi.useFakeTimers({ now: 0 });
    const store = createMemoryResponseStore(MiB);
    const text = 'x'.repeat(90 * 1024);
    store.set('one:old', answer(text, 1), 0);
    for (let n = 0; n < 9; n++) store.set(`one:${n}`, answer(text), 0);
    vi.setSystemTime(2_000);
    expect(read(store, 'one:old')).toBeNull();
    store.set('one:9', answer(text), 2_000);
    expect(read(store, 'one:0')).not.toBeNull();
  });

  it('refuses a read that began in the millisecond of a forgotten eviction', () => {
    vi.useFakeTimers({ now: 100_000 });
    // Room for a few eviction records only.
    const store = createMemoryResponseStore(64 * 1024);
    for (let n = 0; n < 100; n++) store.evictSession(`s${n}`);
    store.set('one:a', answer('x'), 100_000);
    expect(read(store, 'one:a')).toBeNull();
  });

  it("keeps other sessions' reads when one session's eviction is renewed", () => {
    vi.useFakeTimers({ now: 100_000 });
    const store = createMemoryResponseStore(MiB);
    store.evictSession('one');
    vi.setSystemTime(200_000);
    store.evictSession('one');
    store.set('two:a', answer('x'), 99_000);
    expect(read(store, 'two:a')).not.toBeNull();
  });
});

describe('heapBytes', () => {
  it('counts a string by its header and a byte a character, two past Latin-1', () => {
    expect(stringBytes('a'.repeat(100))).toBe(120);
    expect(stringBytes('é'.repeat(100))).toBe(120);
    expect(stringBytes('ĉ'.repeat(100))).toBe(216);
    expect(heapBytes('a'.repeat(100))).toBe(120);
  });

  it('counts a number outside a small integer as a heap number, and nothing for the rest', () => {
    expect(heapBytes(7)).toBe(0);
    expect(heapBytes(-(2 ** 31) + 1)).toBe(0);
    expect(heapBytes(2 ** 31)).toBe(16);
    expect(heapBytes(1.5)).toBe(16);
    expect(heapBytes(null)).toBe(0);
    expect(heapBytes(true)).toBe(0);
    expect(heapBytes(undefined)).toBe(0);
  });

  it('counts arrays by the slots they grew to and objects by their slots, with what they hold', () => {
    expect(heapBytes([])).toBe(32);
    expect(heapBytes([1])).toBe(48 + 8 * 16);
    expect(heapBytes(Array.from({ length: 16 }, () => 1))).toBe(48 + 8 * 16);
    expect(heapBytes(Array.from({ length: 17 }, () => 1))).toBe(48 + 8 * 40);
    expect(heapBytes(['abc', 1.5])).toBe(48 + 8 * 16 + 24 + 16);
    expect(heapBytes({})).toBe(24);
    expect(heapBytes({ a: 'abc', b: null })).toBe(24 + 8 + 24 + 8);
  });
});
