import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { createRedisResponseStore } from '../../src/cache/redis-store.js';
import type { Answer, ResponseStore } from '../../src/cache/response-store.js';
import { connected, hasRedis, usedMemory } from '../helpers/redis.js';
import { useRedisServer } from '../helpers/redis-server.js';

const MiB = 1024 * 1024;
// Keys as the response cache makes them: two SHA-256 hashes in base64url.
const session = (i: number) => `s${String(i).padStart(42, '0')}`;
const operation = (i: number) => `o${String(i).padStart(42, '0')}`;
const answer = (text: string, maxAge = 600): Answer => ({
  result: { data: { text } },
  policy: { maxAge, scope: 'PRIVATE' },
});

/** Keeps `count` answers, a few hundred at a time as a busy replica would. */
async function fill(store: ResponseStore, count: number, key: (i: number) => string, text: string) {
  for (let i = 0; i < count; i += 250) {
    const batch: Array<void | Promise<void>> = [];
    for (let j = i; j < Math.min(count, i + 250); j++)
      batch.push(store.set(key(j), answer(text), Date.now()));
    await Promise.all(batch);
  }
}

describe('the response cache in Redis, held to its bound', () => {
  describe.skipIf(!hasRedis)('with a real redis-server', () => {
    const server = useRedisServer();

    // What RESPONSE_CACHE_REDIS_BYTES promises is Redis's memory, whatever the answers look like:
    // each is written past twice what the bound holds. One session alone can reach its share only.
    const bound = 4 * MiB;
    const share = MiB;
    it.each([
      { shape: 'tiny answers, each of its own session', count: 11_000, size: 10, reach: bound },
      { shape: 'tiny answers of one session', count: 3_000, size: 10, one: true, reach: share },
      { shape: 'answers of 2 kB, a hundred sessions', count: 3_500, size: 2_000, reach: bound },
      { shape: 'answers of 200 kB', count: 45, size: 200_000, reach: bound },
    ])(
      'grows Redis by its bound within 1.5 times: $shape',
      async ({ count, size, one, reach }) => {
        const store = createRedisResponseStore(server.redis, { redisBytes: bound, memoryBytes: 0 });
        // The scripts loaded, so that what grows is the answers alone.
        await store.set(`${session(0)}:warm`, answer('warm'), Date.now());
        await server.look.flushall();
        const before = await usedMemory(server.look);
        const key = one
          ? (i: number) => `${session(1)}:${operation(i)}`
          : (i: number) => `${session(i % (size > 1_000 ? 100 : count))}:${operation(i)}`;
        await fill(store, count, key, 'x'.repeat(size));
        const grown = (await usedMemory(server.look)) - before;
        expect(grown).toBeGreaterThan(reach / 1.5);
        expect(grown).toBeLessThan(reach * 1.5);
        expect(
          Number(await server.look.get('graphql-facade:{response}:index:bytes')),
        ).toBeLessThanOrEqual(bound);
        // A session past its share keeps nothing more, and takes nothing from the others.
        await store.set(`${session(2)}:${operation(0)}`, answer('another'), Date.now());
        expect((await store.get(`${session(2)}:${operation(0)}`))?.data).toEqual({
          text: 'another',
        });
      },
      60_000,
    );

    it('evicts a session of ten thousand answers in one step that never walks them', async () => {
      const store = createRedisResponseStore(server.redis, {
        redisBytes: 256 * MiB,
        memoryBytes: 0,
      });
      const key = (i: number) => `${session(7)}:${operation(i)}`;
      for (let i = 0; i < 2_000; i += 250) {
        const batch: Array<void | Promise<void>> = [];
        for (let j = i; j < i + 250; j++)
          batch.push(store.set(`${session(7)}:expired${j}`, answer('gone', 1), Date.now()));
        await Promise.all(batch);
      }
      await fill(store, 10_000, key, 'x'.repeat(100));
      await sleep(1_100);
      // The script loaded first, so that what is timed is its run alone.
      await store.evictSession(session(8));
      await server.look.config('SET', 'slowlog-log-slower-than', '0');
      await server.look.slowlog('RESET');
      await store.evictSession(session(7));
      const log = (await server.look.slowlog('GET', 10)) as Array<
        [number, number, number, string[]]
      >;
      await server.look.config('SET', 'slowlog-log-slower-than', '10000');
      const evictions = log.filter(([, , , command]) => /^eval/i.test(String(command[0])));
      expect(evictions).toHaveLength(1);
      // SLOWLOG's durations are in microseconds.
      expect(evictions[0]?.[2]).toBeLessThan(1_000);

      for (const i of [0, 4_999, 9_999]) expect(await store.get(key(i))).toBeNull();
      // Kept again once asked again after the eviction.
      await store.set(key(0), answer('again'), Date.now() + 1);
      expect((await store.get(key(0)))?.data).toEqual({ text: 'again' });
    }, 60_000);

    it('keeps no answer whose execution began before its session was evicted, on any replica', async () => {
      // Another replica's connection.
      const other = await connected(server.url);
      try {
        const a = createRedisResponseStore(server.redis, { redisBytes: 4 * MiB, memoryBytes: 0 });
        const b = createRedisResponseStore(other, { redisBytes: 4 * MiB, memoryBytes: 0 });
        const kept = `${session(3)}:${operation(1)}`;
        const inFlight = `${session(3)}:${operation(2)}`;
        const elsewhere = `${session(4)}:${operation(1)}`;
        await a.set(kept, answer('kept'), Date.now());
        await a.set(elsewhere, answer('elsewhere'), Date.now());
        const began = Date.now();
        await sleep(5);
        await b.evictSession(session(3));
        // The read that began before the eviction finishes after it: not kept.
        await a.set(inFlight, answer('stale'), began);
        expect(await a.get(inFlight)).toBeNull();
        expect(await b.get(kept)).toBeNull();
        expect(await a.get(kept)).toBeNull();
        // Another session's answers stay.
        expect((await b.get(elsewhere))?.data).toEqual({ text: 'elsewhere' });
        // The eviction is remembered for as long as the answers kept before it live.
        const ttl = await server.look.pttl(`graphql-facade:{response}:evicted:${session(3)}`);
        expect(ttl).toBeGreaterThan(590_000);
        await sleep(5);
        await a.set(inFlight, answer('fresh'), Date.now());
        expect((await b.get(inFlight))?.data).toEqual({ text: 'fresh' });
      } finally {
        other.disconnect();
      }
    });

    it("remembers an eviction as long as its own session's answers live, a minute when it kept none", async () => {
      const store = createRedisResponseStore(server.redis, { redisBytes: 4 * MiB, memoryBytes: 0 });
      const YEAR = 365 * 86_400;
      // Somebody's answer that lives a year must not make every other eviction live a year.
      await store.set(`${session(7)}:${operation(1)}`, answer('a year', YEAR), Date.now());
      await store.set(`${session(6)}:${operation(1)}`, answer('two minutes', 120), Date.now());
      // Refused callers' mutations: sessions that kept nothing.
      for (let i = 100; i < 110; i++) await store.evictSession(session(i));
      await store.evictSession(session(6));
      const evicted = (i: number) =>
        server.look.pttl(`graphql-facade:{response}:evicted:${session(i)}`);
      for (let i = 100; i < 110; i++) {
        expect(await evicted(i)).toBeGreaterThan(0);
        expect(await evicted(i)).toBeLessThanOrEqual(60_000);
      }
      expect(await evicted(6)).toBeGreaterThan(60_000);
      expect(await evicted(6)).toBeLessThanOrEqual(120_000);
      expect(await store.get(`${session(6)}:${operation(1)}`)).toBeNull();
      expect((await store.get(`${session(7)}:${operation(1)}`))?.data).toEqual({ text: 'a year' });
    });

    it('writes each answer to expire with its max-age in milliseconds, and ages it as it is read', async () => {
      const store = createRedisResponseStore(server.redis, { redisBytes: 4 * MiB, memoryBytes: 0 });
      const key = `${session(8)}:${operation(1)}`;
      await store.set(key, answer('short', 3), Date.now());
      const ttl = await server.look.pttl(`graphql-facade:{response}:answer:${key}`);
      expect(ttl).toBeGreaterThan(2_000);
      expect(ttl).toBeLessThanOrEqual(3_000);
      await sleep(1_100);
      // Over a second has passed: served with the whole second it has left, then gone with its
      // max-age.
      expect((await store.get(key))?.policy.maxAge).toBe(1);
      await sleep(2_000);
      expect(await store.get(key)).toBeNull();
    });
  });
});
