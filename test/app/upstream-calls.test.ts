import { describe, expect, it } from 'vitest';
import { useHarness } from '../helpers/harness.js';

const TOKEN = 'debug-token-0123456789abcdef';
const QUERY = `{
  a: repositories(limit: 2) { items { id } }
  b: repositories(limit: 2) { items { id } }
  c: repositoriesConnection(first: 2, after: "${Buffer.from('repositories:0').toString('base64url')}") { totalCount }
  far: repositories(limit: 1, offset: 40) { items { id } }
}`;

interface Shown {
  upstreamCalls?: {
    calls: Array<Record<string, unknown>>;
    budget: { used: number; limit: number };
  };
  cost?: { estimated: number; max: number };
}

describe('extensions.upstreamCalls', () => {
  const h = useHarness({ config: { maxCoalescedRange: 10 } });

  it('lists the REST calls behind a development answer, the fields that shared each, and the budget used', async () => {
    const answer = await h.gql(QUERY, undefined, { authorization: 'Bearer secret-credential' });
    expect(answer.errors).toBeUndefined();
    const shown = (answer.extensions as Shown).upstreamCalls;
    expect(shown?.calls).toEqual([
      {
        method: 'GET',
        route: '/git/v1/repo',
        status: 200,
        durationMs: expect.any(Number),
        attempts: 1,
        // a and b asked for the same page (de-duplicated); c's page overlaps it (merged).
        fields: ['a', 'b', 'c'],
      },
      {
        method: 'GET',
        route: '/git/v1/repo',
        status: 200,
        durationMs: expect.any(Number),
        attempts: 1,
        fields: ['far'],
      },
    ]);
    expect(shown?.budget).toEqual({ used: 2, limit: h.config.maxUpstreamCalls });
    // Beside them, the operation's estimated cost: a page or connection 10, a repository 1 each.
    expect((answer.extensions as Shown).cost).toEqual({
      estimated: 12 + 12 + 10 + 11,
      max: h.config.limits.maxCost,
    });
    const text = JSON.stringify(answer.extensions);
    expect(text).not.toMatch(/secret-credential|limit=|offset=|127\.0\.0\.1/);
  });

  it('counts the attempts of a retried call', async () => {
    h.sandbox.setFault('GET /git/v1/repo', { status: 503, times: 1 });
    const answer = await h.gql('{ repositories(limit: 1) { total } }');
    expect((answer.extensions as Shown).upstreamCalls?.calls).toEqual([
      expect.objectContaining({ status: 200, attempts: 2, fields: ['repositories'] }),
    ]);
  });

  describe('in production', () => {
    const app = () => h.createApp({ config: { production: true, debugToken: TOKEN } });

    it('shows nothing without the debug token, or with a wrong one', async () => {
      const attempts: Array<Record<string, string>> = [{}, { 'x-facade-debug': 'not-the-token' }];
      for (const headers of attempts) {
        const fromProduction = await app().fetch('http://facade.test/graphql', {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify({ query: '{ repositories(limit: 1) { total } }' }),
        });
        const body = (await fromProduction.json()) as { extensions?: unknown; data?: unknown };
        expect(body.data).toBeTruthy();
        expect(body.extensions).toBeUndefined();
      }
    });

    it('shows the calls to a caller presenting the debug token', async () => {
      const response = await app().fetch('http://facade.test/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-facade-debug': TOKEN },
        body: JSON.stringify({ query: '{ repositories(limit: 1) { total } }' }),
      });
      const body = (await response.json()) as { extensions?: Shown };
      expect(body.extensions?.upstreamCalls?.calls).toHaveLength(1);
      expect(body.extensions?.upstreamCalls?.budget.used).toBe(1);
      expect(body.extensions?.cost).toEqual({ estimated: 10, max: h.config.limits.maxCost });
    });

    it('never shows them when no debug token is configured', async () => {
      const response = await h
        .createApp({ config: { production: true, debugToken: undefined } })
        .fetch('http://facade.test/graphql', {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-facade-debug': '' },
          body: JSON.stringify({ query: '{ repositories(limit: 1) { total } }' }),
        });
      expect(((await response.json()) as { extensions?: unknown }).extensions).toBeUndefined();
    });
  });
});
