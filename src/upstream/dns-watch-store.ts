// The fleet's share of watched names in Redis: a short lease (SET NX PX) decides which process
// looks a name up, and its result is kept for the others until that process's next look-up is due.
// Redis is a cache here too: when it fails, each process looks up alone.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import type { RedisConnection } from '../redis.js';
import type { TxtLookupResult } from './dns.js';

export interface DnsWatchStore {
  /**
   * What `host` says for the fleet: a result another process keeps, else `lookUp`'s (kept for
   * `keepMs(result)`) once this process holds the name's lease, else the lease holder's.
   */
  lookUp(
    host: string,
    lookUp: () => Promise<TxtLookupResult | undefined>,
    keepMs: (result: TxtLookupResult) => number,
  ): Promise<TxtLookupResult | undefined>;
}

const storedResult: z.ZodType<TxtLookupResult> = z.discriminatedUnion('outcome', [
  z.object({
    outcome: z.literal('found'),
    values: z.array(z.string()),
    ttlS: z.number().optional(),
  }),
  z.object({ outcome: z.enum(['no-such-name', 'no-record', 'timeout', 'refused']) }),
  z.object({ outcome: z.literal('failed'), code: z.string() }),
]);

export interface RedisDnsWatchOptions {
  /** How long a lease holds: DNS_TIMEOUT_MS and a margin, so a process that died frees it. */
  leaseMs: number;
  /** How often a process without the lease reads what the holder found. */
  pollMs?: number;
}

/** Keys without the deployment's prefix: the connection adds REDIS_KEY_PREFIX itself. */
const keys = (host: string) => ({
  // One hash slot per name, so a Cluster keeps a name's lease and result together.
  result: `dns-watch:{${host}}:result`,
  lease: `dns-watch:{${host}}:lease`,
});

export function createRedisDnsWatchStore(
  redis: RedisConnection,
  { leaseMs, pollMs = 100 }: RedisDnsWatchOptions,
): DnsWatchStore {
  const owner = randomUUID();
  const read = async (key: string): Promise<TxtLookupResult | undefined> => {
    const raw = await redis.run(() => redis.client.get(key));
    if (raw === null) return undefined;
    const parsed = storedResult.safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : undefined;
  };
  return {
    async lookUp(host, lookUp, keepMs) {
      const key = keys(host);
      try {
        const kept = await read(key.result);
        if (kept) return kept;
        const leased = await redis.run(() =>
          redis.client.set(key.lease, owner, 'PX', leaseMs, 'NX'),
        );
        if (leased !== 'OK') return await waitForHolder(key.result, read, leaseMs, pollMs, lookUp);
      } catch {
        return lookUp();
      }
      const result = await lookUp();
      // Kept until this process's next look-up is due; the lease goes as the result comes, so
      // the next round's look-up is not held up by this one's.
      const value = result && JSON.stringify(result);
      await redis
        .run(async () => {
          if (result && value) await redis.client.set(key.result, value, 'PX', keepMs(result));
          await redis.client.del(key.lease);
        })
        .catch(() => {});
      return result;
    },
  };
}

/** The lease holder's result; past the lease (it died, or Redis went away), a look-up of its own. */
async function waitForHolder(
  key: string,
  read: (key: string) => Promise<TxtLookupResult | undefined>,
  leaseMs: number,
  pollMs: number,
  lookUp: () => Promise<TxtLookupResult | undefined>,
): Promise<TxtLookupResult | undefined> {
  const deadline = Date.now() + leaseMs;
  while (Date.now() < deadline) {
    await sleep(pollMs);
    const kept = await read(key).catch(() => undefined);
    if (kept) return kept;
  }
  return lookUp();
}
