import { describe, expect, it } from 'vitest';
import { addVary, chooseEncoding } from '../../src/http/headers.js';

describe('Vary', () => {
  it('sets every name at once on a response without one', () => {
    const headers = new Headers();
    addVary(headers, 'Origin', 'Accept');
    expect(headers.get('vary')).toBe('Origin, Accept');
  });

  it('lists a name given twice once (a forwarded header may be one of the others)', () => {
    const headers = new Headers();
    addVary(headers, 'Origin', 'Accept', 'origin');
    expect(headers.get('vary')).toBe('Origin, Accept');
  });

  it('adds only the names not listed already, whatever their case', () => {
    const headers = new Headers({ vary: 'origin,  ACCEPT' });
    addVary(headers, 'Origin', 'Accept', 'Authorization');
    expect(headers.get('vary')).toBe('origin,  ACCEPT, Authorization');
    addVary(headers, 'authorization');
    expect(headers.get('vary')).toBe('origin,  ACCEPT, Authorization');
  });
});

describe('content encoding', () => {
  it.each([
    [null, 'identity'],
    ['gzip, deflate, br', 'br'],
    ['gzip', 'gzip'],
    ['br;q=0, gzip;q=0.5', 'gzip'],
    ['*', 'br'],
    ['*;q=0, identity', 'identity'],
  ])('answers %s with %s', (accept, encoding) => {
    expect(chooseEncoding(accept)).toBe(encoding);
  });
});
