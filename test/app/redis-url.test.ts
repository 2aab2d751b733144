import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { parseRedisUrl, redisWhere } from '../../src/config/redis-url.js';
import { unexpectedFailure } from '../../src/process/startup-errors.js';

describe('REDIS_URL', () => {
  it("takes one server, a Cluster's seeds and Sentinel's, in Apollo Router's forms", () => {
    expect(parseRedisUrl('redis://cache:6380/2')).toMatchObject({ kind: 'server', tls: false });
    expect(parseRedisUrl('rediss://:pw@cache')).toMatchObject({
      kind: 'server',
      tls: true,
      password: 'pw',
    });
    expect(parseRedisUrl('redis-cluster://10.0.0.1:7000,10.0.0.2:7001,[::1]:7002')).toEqual({
      kind: 'cluster',
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: '10.0.0.2', port: 7001 },
        { host: '::1', port: 7002 },
      ],
      tls: false,
      username: undefined,
      password: undefined,
    });
    expect(parseRedisUrl('rediss-cluster://app:p%40ss@node-a:7000')).toMatchObject({
      kind: 'cluster',
      tls: true,
      username: 'app',
      password: 'p@ss',
    });
    expect(
      parseRedisUrl(
        'redis-sentinel://:secret@s1:26379,s2,s3:26380/1?sentinelServiceName=facade&sentinelPassword=sp',
      ),
    ).toEqual({
      kind: 'sentinel',
      sentinels: [
        { host: 's1', port: 26379 },
        { host: 's2', port: 26379 },
        { host: 's3', port: 26380 },
      ],
      name: 'facade',
      db: 1,
      sentinelUsername: undefined,
      sentinelPassword: 'sp',
      tls: false,
      username: undefined,
      password: 'secret',
    });
    expect(parseRedisUrl('rediss-sentinel://s1:26379?sentinelServiceName=m')).toMatchObject({
      kind: 'sentinel',
      tls: true,
    });
    expect(loadConfig({ REDIS_URL: 'redis-cluster://a:1,b:2' }).rateLimit.redisUrl).toBe(
      'redis-cluster://a:1,b:2',
    );
  });

  it.each([
    ['http://cache:6379', 'must be redis://'],
    ['redis-cluster://a:1,b:70000', '"b:70000"'],
    ['redis-cluster://a:1,,b:2', '""'],
    ['redis-sentinel://s1:26379', 'sentinelServiceName'],
    ['redis-cluster://a:1/3', 'database'],
    ['redis://a:1,b:2', 'one server'],
    ['redis-cluster://:hunter2@a:1,b:x', '"b:x"'],
  ])('refuses %s in one line naming the variable, without its password', (url, reason) => {
    let error: unknown;
    try {
      loadConfig({ REDIS_URL: url });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const { message } = error as ConfigError;
    expect(message).toMatch(/^REDIS_URL: /);
    expect(message).toContain(reason);
    expect(message).not.toContain('\n');
    expect(message).not.toContain('hunter2');
  });

  it('is logged as its scheme and hosts, and its passwords are blanked out of failures', () => {
    const url =
      'redis-sentinel://:master-pw@s1:26379,s2:26379?sentinelServiceName=m&sentinelPassword=sent-pw';
    expect(redisWhere(url)).toBe('redis-sentinel://s1:26379,s2:26379');
    const config = loadConfig({ REDIS_URL: url });
    const line = unexpectedFailure(new Error('auth master-pw then sent-pw failed'), config);
    expect(line).not.toContain('master-pw');
    expect(line).not.toContain('sent-pw');
  });

  it('takes REDIS_KEY_PREFIX, without braces, which would move every key into one slot', () => {
    expect(loadConfig({}).rateLimit.redisKeyPrefix).toBe('graphql-facade:');
    expect(loadConfig({ REDIS_KEY_PREFIX: 'staging:' }).rateLimit.redisKeyPrefix).toBe('staging:');
    expect(() => loadConfig({ REDIS_KEY_PREFIX: '{tenant}:' })).toThrow(/^REDIS_KEY_PREFIX: /);
  });
});
