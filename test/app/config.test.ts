import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';

describe('DNS configuration', () => {
  it('accepts IP resolvers with optional ports', () => {
    expect(
      loadConfig({
        DNS_SERVERS: '127.0.0.1:5353, ::1,[::1]:53',
        DNS_TIMEOUT_MS: '500',
        DNS_TRIES: '3',
      }).dns,
    ).toEqual({
      servers: ['127.0.0.1:5353', '::1', '[::1]:53'],
      timeoutMs: 500,
      tries: 3,
    });
    expect(loadConfig({}).dns.servers).toBeUndefined();
  });

  it.each(['live.dns.google', '1.2.3.4:99999', '1.2.3:53'])(
    'refuses DNS_SERVERS=%j naming the variable',
    (value) => {
      expect(() => loadConfig({ DNS_SERVERS: value })).toThrow(
        /^DNS_SERVERS: must be IP\[:port\] entries/,
      );
    },
  );
});
