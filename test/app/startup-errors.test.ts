import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { listenFailure, unexpectedFailure } from '../../src/process/startup-errors.js';

describe('start-up failure lines', () => {
  const config = loadConfig({
    UPSTREAM_URL: 'https://api.example',
    UPSTREAM_API_KEY: 'key-hunter2-abcdef',
    CLIENT_TOKENS: 'client-token-one,client-token-two',
    REDIS_URL: 'redis://:p%40ss-word-9@redis.internal:6379',
    DEBUG_TOKEN: 'debug-token-0123456789',
    OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otlp.example',
    OTEL_EXPORTER_OTLP_HEADERS: 'x-honeycomb-team=otel-secret-xyz',
  });

  it('blanks out every configured secret a library may quote', () => {
    const error = new Error(
      'connect failed for redis://:p%40ss-word-9@redis.internal:6379 with key-hunter2-abcdef, ' +
        'client-token-two, p@ss-word-9, debug-token-0123456789 and otel-secret-xyz',
    );
    const line = unexpectedFailure(error, config);
    expect(line).toMatch(/^Cannot start: Error: connect failed for \[redacted\]/);
    for (const secret of [
      'hunter2',
      'client-token',
      'ss-word',
      'debug-token',
      'otel-secret',
      'redis.internal',
    ])
      expect(line).not.toContain(secret);
  });

  it('keeps one bounded line, and bounds it after the secrets are gone', () => {
    const padding = 'x'.repeat(290);
    const line = unexpectedFailure(
      new Error(`${padding}key-hunter2-abcdef\nat stack line`),
      config,
    );
    expect(line).not.toContain('\n');
    expect(line).not.toContain('key-hu');
    expect(line.length).toBeLessThanOrEqual('Cannot start: '.length + 300);
  });

  it('blanks out the password of REDIS_URL on its own, as the URL carries it', () => {
    expect(unexpectedFailure(new Error('auth p%40ss-word-9 refused (tls=true)'), config)).toBe(
      'Cannot start: Error: auth [redacted] refused (tls=true)',
    );
  });

  it('blanks out a secret that contains another whole', () => {
    const nested = loadConfig({
      UPSTREAM_URL: 'https://api.example',
      UPSTREAM_API_KEY: 'shared-secret-value',
      CLIENT_TOKENS: 'shared-secret-value-and-more',
    });
    expect(unexpectedFailure(new Error('token shared-secret-value-and-more'), nested)).toBe(
      'Cannot start: Error: token [redacted]',
    );
  });

  it('names the variable that chose the port or the host, and the reason', () => {
    const taken = Object.assign(new Error('listen EADDRINUSE'), { code: 'EADDRINUSE' });
    expect(listenFailure(taken, { port: 'PORT', host: 'HOST' }, '*:4000').message).toBe(
      'PORT: cannot listen on *:4000: the port is already in use (EADDRINUSE)',
    );
    const foreign = Object.assign(new Error('listen'), { code: 'EADDRNOTAVAIL' });
    expect(listenFailure(foreign, { port: 'PORT', host: 'HOST' }, '10.9.9.9:4000').message).toMatch(
      /^HOST: cannot listen on 10\.9\.9\.9:4000: not an address of this machine/,
    );
    const odd = Object.assign(new Error('listen'), { code: 'constructor' });
    expect(listenFailure(odd, { port: 'PORT', host: 'HOST' }, '*:1').message).toBe(
      'PORT: cannot listen on *:1: listen failed (constructor)',
    );
    expect(listenFailure(undefined, { port: 'PORT', host: 'HOST' }, '*:1').message).toBe(
      'PORT: cannot listen on *:1: listen failed (undefined)',
    );
  });
});
