// Routes with values in their path (src/upstream/endpoints.ts): the value is one encoded segment,
// the template stays the route's name, and a value that cannot be a segment costs nothing.
import { describe, expect, it } from 'vitest';
import { FacadeError } from '../../src/errors.js';
import { createInFlight, joinKey } from '../../src/read/join.js';
import { CallBudget } from '../../src/upstream/budget.js';
import type { CompletedCall } from '../../src/upstream/client.js';
import { type Endpoint, fillPath } from '../../src/upstream/endpoints.js';
import { deleteItem } from '../helpers/endpoints.js';
import { upstreamRequests, useHarness } from '../helpers/harness.js';

const read: Endpoint<{ id: string }, void> = { ...deleteItem, method: 'GET', retry: false };

const REFUSED = ['', '.', '..', '\ud800'];

async function codeOf(promise: Promise<unknown>): Promise<unknown> {
  const error = await promise.then(
    () => undefined,
    (failure: unknown) => failure,
  );
  return error instanceof FacadeError ? error.extensions.code : error;
}

describe('fillPath', () => {
  it('sends each value as one percent-encoded segment', () => {
    const filled = (id: string) => fillPath(deleteItem, { id });
    expect(filled('a/b')).toBe('/test/v1/items/a%2Fb');
    expect(filled('é x?#')).toBe('/test/v1/items/%C3%A9%20x%3F%23');
    expect(filled('%2e%2e')).toBe('/test/v1/items/%252e%252e');
    expect(filled('...')).toBe('/test/v1/items/...');
  });

  it('refuses a value that cannot be one segment as BAD_USER_INPUT naming it', () => {
    for (const id of REFUSED)
      expect(() => fillPath(deleteItem, { id }), JSON.stringify(id)).toThrow(
        /^Invalid input: id: /,
      );
  });

  it('fails loudly when a template has no value for a name (a defect of the entry)', () => {
    expect(() => fillPath({ ...deleteItem, params: undefined }, { id: 'a' })).toThrow(
      'no value for {id}',
    );
  });
});

describe('routes with values in their path', () => {
  const calls: CompletedCall[] = [];
  const h = useHarness({ onCall: (call) => calls.push(call) });

  it('requests the filled path and names the call by its template', async () => {
    calls.length = 0;
    expect(await codeOf(h.client.send(deleteItem, { id: 'a/b c' }, {}))).toBe('NOT_FOUND');
    expect(upstreamRequests(h.sandbox).map((r) => `${r.method} ${r.path}`)).toEqual([
      'DELETE /test/v1/items/a%2Fb%20c',
    ]);
    // The metrics label, the span name, the breaker's key and extensions.upstreamCalls.
    expect(calls.map((call) => call.route)).toEqual(['DELETE /test/v1/items/{id}']);
  });

  it('refuses a value that cannot be one segment before any call, and spends no budget', async () => {
    const joining = createInFlight(h.client, { enabled: true });
    for (const id of REFUSED) {
      const budget = new CallBudget(3);
      expect(await codeOf(h.client.send(deleteItem, { id }, { budget }))).toBe('BAD_USER_INPUT');
      expect(await codeOf(joining.send(read, { id }, { budget }))).toBe('BAD_USER_INPUT');
      expect(budget.left).toBe(3);
    }
    expect(upstreamRequests(h.sandbox)).toEqual([]);
  });

  it('joins reads of the same value only', async () => {
    const ids = ['a', 'b', 'a%2F'];
    const keys = ids.map((id) => joinKey(read, { id }, {}));
    expect(new Set(keys).size).toBe(ids.length);
    expect(joinKey(read, { id: 'a' }, {})).toBe(keys[0]);

    let open = () => {};
    const until = new Promise<void>((resolve) => {
      open = resolve;
    });
    for (const id of ['a', 'b'])
      h.sandbox.setFault(`GET /test/v1/items/${id}`, { status: 204, until });
    const joining = createInFlight(h.client, { enabled: true });
    const answers = ['a', 'b', 'a', 'b', 'a'].map((id) => joining.send(read, { id }, {}));
    await expect.poll(() => upstreamRequests(h.sandbox).length).toBe(2);
    open();
    expect((await Promise.all(answers)).map((answer) => answer.joined)).toEqual([
      false,
      false,
      true,
      true,
      true,
    ]);
    expect(
      upstreamRequests(h.sandbox)
        .map((r) => r.path)
        .sort(),
    ).toEqual(['/test/v1/items/a', '/test/v1/items/b']);
  });
});
