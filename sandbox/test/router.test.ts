import { describe, expect, it } from 'vitest';
import { messageBody, type Route } from '../http-io.js';
import { createRouter } from '../router.js';

const route = (method: string, path: string): Route => ({
  method,
  path,
  errorBody: messageBody,
  handle: () => ({ status: 204, body: '', contentType: '' }),
});

const list = route('GET', '/x/v1/items');
const remove = route('DELETE', '/x/v1/items/{id}');
const read = route('GET', '/x/v1/items/{id}');
const tag = route('PUT', '/x/v1/items/{id}/tags/{tag}');
const find = createRouter([list, remove, read, tag]);

describe('createRouter', () => {
  it('finds a fixed path by method', () => {
    expect(find('GET', '/x/v1/items')).toEqual({ route: list, params: {}, allow: ['GET'] });
  });

  it('fills a template from one segment each, decoded', () => {
    expect(find('DELETE', '/x/v1/items/a%2Fb%20%E2%82%AC')).toMatchObject({
      route: remove,
      params: { id: 'a/b €' },
    });
    expect(find('PUT', '/x/v1/items/7/tags/v1.2')).toMatchObject({
      route: tag,
      params: { id: '7', tag: 'v1.2' },
    });
  });

  it('tells the methods of a template a request did not use (405)', () => {
    expect(find('POST', '/x/v1/items/7')).toEqual({
      route: undefined,
      params: { id: '7' },
      allow: ['DELETE', 'GET'],
    });
  });

  it('finds nothing (404) for a path no route has, nor a segment too many, empty or undecodable', () => {
    for (const path of [
      '/x/v1/nope',
      '/x/v1/items/a/b',
      '/x/v1/items/',
      '/x/v1/items/%zz',
      '/x/v1/items/7/tags',
    ])
      expect(find('GET', path), path).toEqual({ route: undefined, params: {}, allow: [] });
  });
});
