import { GraphQLError } from 'graphql';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createBoundedSpace } from '../../src/cache/redis-bounded.js';
import { createRedisResponseStore } from '../../src/cache/redis-store.js';
import type { Answer, KeptAnswer } from '../../src/cache/response-store.js';
import { connectRedis } from '../../src/redis.js';
import { postGraphQL, upstreamRequests, useHarness } from '../helpers/harness.js';
import { freePort } from '../helpers/net.js';
import { hasRedis } from '../helpers/redis.js';
import { useRedisServer } from '../helpers/redis-server.js';

const MiB = 1024 * 1024;
const RESPONSE = 'graphql-facade:{response}:';
// Keys as the response cache makes them: two SHA-256 hashes in base64url.
const session = (i: number) => `s${String(i).padStart(42, '0')}`;
const operation = (i: number) => `o${String(i).padStart(42, '0')}`;
const answer = (text: string, maxAge = 600): Answer => ({
  result: { data: { text } },
  policy: { maxAge, scope: 'PRIVATE' },
});
const textOf = (kept: KeptAnswer | null) => (kept?.data as { text?: string } | undefined)?.text;

describe.skipIf(!hasRedis)('Redis key spaces, with a real redis-server', () => {
  const server = useRedisServer();

  afterEach(() => {
    vi.useRealTimers();
  });

  describe('createRedisResponseStore', () => {
    const store = () =>
      createRedisResponseStore(server.redis, { redisBytes: 4 * MiB, memoryBytes: 0 });

    it('keeps an answer under its own key, expiring with its max-age in milliseconds', async () => {
      const answers = store();
      expect(answers.kind).toBe('redis');
      // Shared with every replica: never known to be empty here.
      expect(answers.empty).toBe(false);
      const key = `${session(1)}:${operation(1)}`;
      expect(await answers.get(key)).toBeNull();
      await answers.set(key, answer('kept', 30), Date.now());
      const ttl = await server.look.pttl(`${RESPONSE}answer:${key}`);
      expect(ttl).toBeGreaterThan(25_000);
      expect(ttl).toBeLessThanOrEqual(30_000);
      const kept = await answers.get(key);
      expect(kept?.stringify()).toBe('{"data":{"text":"kept"}}');
      expect(kept?.policy.scope).toBe('PRIVATE');
      expect(Number(await server.look.get(`${RESPONSE}index:bytes`))).toBeGreaterThan(0);

      const shared = `${session(1)}:${operation(2)}`;
      const policy = { maxAge: 60, privateMaxAge: 30, scope: 'PUBLIC' as const };
      await answers.set(shared, { result: { data: { text: 'shared' } }, policy }, Date.now());
      // Served with the lifetimes it has left: a second less once a millisecond has passed.
      const served = (await answers.get(shared))?.policy;
      expect(served?.scope).toBe('PUBLIC');
      expect([59, 60]).toContain(served?.maxAge);
      expect([29, 30]).toContain(served?.privateMaxAge);
    });

    it('serves an answer with the lifetime Redis has left of it, and none under a second', async () => {
      const answers = store();
      const key = `${session(2)}:${operation(1)}`;
      await answers.set(key, answer('ageing', 600), Date.now());
      expect((await answers.get(key))?.policy.maxAge).toBeGreaterThan(590);
      // As if kept 589.5 s ago: ten whole seconds are left.
      await server.look.pexpire(`${RESPONSE}answer:${key}`, 10_500);
      const kept = await answers.get(key);
      expect(kept?.policy.maxAge).toBe(10);
      expect(textOf(kept)).toBe('ageing');
      await server.look.pexpire(`${RESPONSE}answer:${key}`, 900);
      expect(await answers.get(key)).toBeNull();
    });

    it('keeps no answer with errors, nor one whose read ran past the minute an eviction is remembered', async () => {
      vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
      const answers = store();
      const now = Date.now();
      const [failed, slow, minute] = [1, 2, 3].map((i) => `${session(3)}:${operation(i)}`) as [
        string,
        string,
        string,
      ];
      await answers.set(
        failed,
        { result: { data: null, errors: [new GraphQLError('no')] }, policy: answer('x').policy },
        now,
      );
      await answers.set(slow, answer('slow'), now - 60_001);
      await answers.set(minute, answer('a minute'), now - 60_000);
      expect(await answers.get(failed)).toBeNull();
      expect(await answers.get(slow)).toBeNull();
      expect(
        await server.look.exists(`${RESPONSE}answer:${failed}`, `${RESPONSE}answer:${slow}`),
      ).toBe(0);
      expect(textOf(await answers.get(minute))).toBe('a minute');
    });

    it("evicts one session's answers and no other's, remembered as long as they would live", async () => {
      const answers = store();
      const [gone, other] = [session(4), session(5)];
      await answers.set(`${gone}:${operation(1)}`, answer('gone', 120), Date.now());
      await answers.set(`${other}:${operation(1)}`, answer('other', 120), Date.now());
      const began = Date.now();
      await answers.evictSession(gone);
      expect(await answers.get(`${gone}:${operation(1)}`)).toBeNull();
      expect(textOf(await answers.get(`${other}:${operation(1)}`))).toBe('other');
      const remembered = await server.look.pttl(`${RESPONSE}evicted:${gone}`);
      expect(remembered).toBeGreaterThan(60_000);
      expect(remembered).toBeLessThanOrEqual(120_000);
      // A read that began before the eviction is not kept; one after it is.
      await answers.set(`${gone}:${operation(2)}`, answer('stale'), began);
      expect(await answers.get(`${gone}:${operation(2)}`)).toBeNull();
      const evictedAt = Number(await server.look.get(`${RESPONSE}evicted:${gone}`));
      expect(evictedAt).toBeGreaterThanOrEqual(began);
      await vi.waitFor(() => expect(Date.now()).toBeGreaterThan(evictedAt));
      await answers.set(`${gone}:${operation(2)}`, answer('fresh'), Date.now());
      expect(textOf(await answers.get(`${gone}:${operation(2)}`))).toBe('fresh');
    });

    it('serves no answer kept in the millisecond its session was evicted', async () => {
      vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
      const answers = store();
      const key = `${session(6)}:${operation(1)}`;
      await answers.set(key, answer('same millisecond'), Date.now());
      await answers.evictSession(session(6));
      expect(await answers.get(key)).toBeNull();
    });

    it('counts each session once beside its answers, and holds it to its share', async () => {
      const answers = store();
      const bytes = async () => Number(await server.look.get(`${RESPONSE}index:bytes`));
      const since = Date.now();
      const one = session(7);
      await answers.set(`${one}:${operation(1)}`, answer('x'), since);
      const first = await bytes();
      await answers.set(`${one}:${operation(2)}`, answer('x'), since);
      const second = await bytes();
      // The first answer also counted its session's own record, beyond its name.
      expect(2 * first - second).toBeGreaterThan(one.length);
      expect(await answers.get(`${one}:${operation(1)}`)).not.toBeNull();

      // An eighth of 4 MiB, at least 1 MiB, is one session's: 100 kB answers, ten and no more.
      const big = session(8);
      const text = 'y'.repeat(100_000);
      for (let i = 0; i < 15; i++)
        await answers.set(`${big}:${operation(i)}`, answer(text), Date.now());
      expect(textOf(await answers.get(`${big}:${operation(0)}`))).toBe(text);
      expect(await answers.get(`${big}:${operation(14)}`)).toBeNull();
      expect(Number(await server.look.hget(`${RESPONSE}index:owners`, big))).toBeLessThanOrEqual(
        MiB,
      );
      await answers.set(`${session(9)}:${operation(1)}`, answer(text), Date.now());
      expect(textOf(await answers.get(`${session(9)}:${operation(1)}`))).toBe(text);
    });

    it('reads a value of another form as a miss', async () => {
      const answers = store();
      const policy = '{"maxAge":60,"scope":"PRIVATE"}';
      const values = {
        // No line break: the header alone, with one more character.
        header: `R2 ${Date.now()} ${policy}}`,
        scope: `R2 ${Date.now()} {"maxAge":60,"scope":"SHARED"}\n{"data":{}}`,
        json: `R2 ${Date.now()} {maxAge}\n{"data":{}}`,
        older: `PUBLIC\n{"data":{}}`,
      };
      for (const [name, value] of Object.entries(values)) {
        const key = `${session(10)}:${name}`;
        await server.look.set(`${RESPONSE}answer:${key}`, value, 'PX', 60_000);
        expect(await answers.get(key)).toBeNull();
      }
    });

    it('keeps answers in memory while Redis is unreachable, and forgets them on eviction', async () => {
      const down = await connectRedis(`redis://127.0.0.1:${await freePort()}`, { timeoutMs: 200 });
      try {
        const answers = createRedisResponseStore(down, { redisBytes: 4 * MiB, memoryBytes: MiB });
        const [evicted, forgotten] = [session(11), session(12)];
        await answers.set(`${evicted}:${operation(1)}`, answer('here'), Date.now());
        await answers.set(`${forgotten}:${operation(1)}`, answer('here too'), Date.now());
        expect(textOf(await answers.get(`${evicted}:${operation(1)}`))).toBe('here');
        expect(textOf(await answers.get(`${forgotten}:${operation(1)}`))).toBe('here too');
        await answers.evictSession(evicted);
        answers.forgetHere(forgotten);
        expect(await answers.get(`${evicted}:${operation(1)}`)).toBeNull();
        expect(await answers.get(`${forgotten}:${operation(1)}`)).toBeNull();
      } finally {
        down.disconnect();
      }
    });
  });

  describe('createBoundedSpace', () => {
    // As APQ's documents are kept: no owner, no share of their own, no eviction minimum.
    const space = () =>
      createBoundedSpace(server.redis, {
        tag: 'space',
        entry: 'item',
        boundBytes: 10_000,
        entryOverheadBytes: 100,
        purgePerWrite: 10,
      });

    it('keeps an entry without an owner, counted by its bytes alone', async () => {
      const items = space();
      expect(await items.get('missing')).toBeNull();
      expect(await items.set('a', 'x'.repeat(100), 60_000)).toBe(true);
      const first = Number(await server.look.get('graphql-facade:{space}:index:bytes'));
      expect(await items.set('b', 'x'.repeat(100), 60_000)).toBe(true);
      expect(Number(await server.look.get('graphql-facade:{space}:index:bytes'))).toBe(2 * first);
      expect(await server.look.exists('graphql-facade:{space}:index:owners')).toBe(0);
      const kept = await items.get('a');
      expect(kept).toEqual({ value: 'x'.repeat(100), msLeft: expect.any(Number) });
      expect(kept?.evictedAt).toBeUndefined();
      expect(kept?.msLeft).toBeGreaterThan(50_000);
    });

    it('answers false for an entry it cannot keep', async () => {
      const items = space();
      expect(await items.set('huge', 'x'.repeat(20_000), 60_000)).toBe(false);
      expect(await items.get('huge')).toBeNull();
    });

    it("reads an owner's eviction beside its entries only, and remembers it a minute", async () => {
      const items = space();
      await items.set('abc:1', 'owned', 600_000, { owner: 'abc', since: Date.now() - 1 });
      await items.set('abcd', 'unowned', 600_000);
      await items.evictOwner('abc');
      expect((await items.get('abc:1'))?.evictedAt).toBeGreaterThan(0);
      expect((await items.get('abcd'))?.evictedAt).toBeUndefined();
      const remembered = await server.look.pttl('graphql-facade:{space}:evicted:abc');
      expect(remembered).toBeGreaterThan(0);
      expect(remembered).toBeLessThanOrEqual(600_000);
      await items.evictOwner('nobody');
      const minimum = await server.look.pttl('graphql-facade:{space}:evicted:nobody');
      expect(minimum).toBeGreaterThan(50_000);
      expect(minimum).toBeLessThanOrEqual(60_000);
    });
  });

  describe('replicas over one Redis', () => {
    const h = useHarness({ sandbox: { repositoryCacheControl: 'max-age=60' } });
    const LIST = '{ repositories(limit: 3) { items { id } } }';

    it("serve one replica's kept answer from another, and a mutation on one evicts it for both", async () => {
      const replica = () =>
        h.createApp({
          responseStore: createRedisResponseStore(server.redis, {
            redisBytes: 4 * MiB,
            memoryBytes: 0,
          }),
        });
      const [a, b] = [replica(), replica()];
      const caller = { authorization: 'Bearer shared' };
      const first = await postGraphQL(a, LIST, undefined, caller);
      const second = await postGraphQL(b, LIST, undefined, caller);
      expect(second.data).toEqual(first.data);
      expect(second.extensions?.upstreamCalls).toEqual({ calls: [], cache: 'hit' });
      expect(upstreamRequests(h.sandbox, 'GET /git/v1/repo')).toHaveLength(1);
      await postGraphQL(
        a,
        'mutation { createDomainVerification(input: { domain: "example.com" }) { id } }',
        undefined,
        caller,
      );
      const after = await postGraphQL(b, LIST, undefined, caller);
      expect(after.extensions?.upstreamCalls).toMatchObject({ cache: 'miss' });
      expect(upstreamRequests(h.sandbox, 'GET /git/v1/repo')).toHaveLength(2);
    });
  });
});
