import type { Endpoint } from '../../src/upstream/endpoints.js';

/**
 * A write with a value in its path, on a route no REST API has: the sandbox answers it 404 unless
 * a fault says otherwise, and records what it was sent.
 */
export const deleteItem: Endpoint<{ id: string }, void> = {
  method: 'DELETE',
  path: '/test/v1/items/{id}',
  params: ({ id }) => ({ id }),
  decode: null,
  retry: false,
  timeout: 'timeoutMs',
};
