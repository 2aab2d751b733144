import { describe, expect, it } from 'vitest';
import { upstreamRequests, useHarness } from '../helpers/harness.js';

const REQUEST = `mutation($input: RequestDevServerInput!) {
  requestDevServer(input: $input) { url ephemeralUrl mcpEphemeralUrl isNew devCommandRunning installCommandRunning }
}`;
const ROUTE = 'POST /ephemeral/v1/dev-servers';

describe('requestDevServer', () => {
  const h = useHarness();

  const sent = () => {
    const requests = upstreamRequests(h.sandbox, ROUTE);
    expect(requests).toHaveLength(1);
    return requests[0]?.body as Record<string, unknown>;
  };

  it('sends every given field, envVars as an object, and answers with the dev server', async () => {
    const input = {
      repoId: 'repo-42',
      gitRef: 'main',
      devCommand: 'npm run dev',
      installCommand: 'npm ci',
      preDevCommandOnce: 'npm run migrate',
      envVars: [
        { name: 'NODE_ENV', value: 'development' },
        { name: '_SECRET', value: '' },
      ],
      computeClass: 'low',
      timeout: 600,
      ports: [
        { port: 443, targetPort: 3000 },
        { port: 8081, targetPort: 9229 },
      ],
    };
    const first = await h.gql(REQUEST, { input }, { authorization: 'Bearer dev' });
    expect(first.errors).toBeUndefined();
    expect(first.data?.requestDevServer).toMatchObject({
      isNew: true,
      devCommandRunning: true,
      installCommandRunning: true,
    });
    expect(sent()).toEqual({ ...input, envVars: { NODE_ENV: 'development', _SECRET: '' } });
    const request = upstreamRequests(h.sandbox, ROUTE)[0];
    expect(request?.headers.authorization).toBe('Bearer dev');
    expect(request?.headers['content-type']).toContain('application/json');

    const second = await h.gql(REQUEST, { input }, { authorization: 'Bearer dev' });
    expect(second.data?.requestDevServer).toMatchObject({ isNew: false });
  });

  it('keeps absent, null and empty ports apart', async () => {
    await h.gql(REQUEST, { input: { repoId: 'a' } });
    expect(sent()).toEqual({ repoId: 'a' });
    h.sandbox.clearRequests();

    await h.gql(REQUEST, { input: { repoId: 'a', ports: [] } });
    expect(sent()).toEqual({ repoId: 'a', ports: [] });
    h.sandbox.clearRequests();

    await h.gql(REQUEST, { input: { repoId: 'a', ports: null, devCommand: null, envVars: null } });
    expect(sent()).toEqual({ repoId: 'a', ports: null, devCommand: null, envVars: null });
  });

  it('sends an empty object for an empty input, and literal arguments the same as variables', async () => {
    await h.gql(REQUEST, { input: {} });
    expect(sent()).toEqual({});
    h.sandbox.clearRequests();
    await h.gql('mutation { requestDevServer(input: { repoId: "x", ports: [] }) { isNew } }');
    expect(sent()).toEqual({ repoId: 'x', ports: [] });
  });

  it('sends the deprecated fields when given', async () => {
    await h.gql(REQUEST, { input: { baseId: 'b', domain: 'd.example', repo: 'r' } });
    expect(sent()).toEqual({ baseId: 'b', domain: 'd.example', repo: 'r' });
  });

  const invalid: Array<[string, Record<string, unknown>, string]> = [
    [
      'an external port other than 443 and 8081',
      {
        ports: [
          { port: 443, targetPort: 1 },
          { port: 80, targetPort: 3000 },
        ],
      },
      'input.ports[1].port',
    ],
    ['a target port of 0', { ports: [{ port: 443, targetPort: 0 }] }, 'input.ports[0].targetPort'],
    [
      'a target port above 65535',
      { ports: [{ port: 8081, targetPort: 65536 }] },
      'input.ports[0].targetPort',
    ],
    [
      'the same external port twice',
      {
        ports: [
          { port: 443, targetPort: 1 },
          { port: 443, targetPort: 2 },
        ],
      },
      'input.ports[1].port',
    ],
    ['a negative timeout', { timeout: -1 }, 'input.timeout'],
    [
      'an env var name starting with a digit',
      { envVars: [{ name: '1A', value: 'x' }] },
      'input.envVars[0].name',
    ],
    [
      'an env var name with a dash',
      {
        envVars: [
          { name: 'A', value: '' },
          { name: 'MY-VAR', value: 'x' },
        ],
      },
      'input.envVars[1].name',
    ],
    [
      'a repeated env var name',
      {
        envVars: [
          { name: 'A', value: '1' },
          { name: 'B', value: '2' },
          { name: 'A', value: '3' },
        ],
      },
      'input.envVars[2].name',
    ],
    ['an empty computeClass', { computeClass: '' }, 'input.computeClass'],
    ['a blank repoId', { repoId: '  ' }, 'input.repoId'],
    ['an empty gitRef', { gitRef: '' }, 'input.gitRef'],
  ];
  for (const [what, input, path] of invalid) {
    it(`rejects ${what}, naming ${path}, with no upstream call`, async () => {
      const result = await h.gql(REQUEST, { input });
      expect(result.data?.requestDevServer ?? null).toBeNull();
      expect(result.errors).toHaveLength(1);
      expect(result.errors?.[0]?.extensions.code).toBe('BAD_USER_INPUT');
      expect(result.errors?.[0]?.message).toContain(path);
      expect(result.errors?.[0]?.extensions.issues).toContainEqual(
        expect.objectContaining({ path }),
      );
      expect(upstreamRequests(h.sandbox)).toHaveLength(0);
    });
  }

  it('refuses a list longer than its maximum with one issue, before checking its items', async () => {
    const lists = {
      ports: Array.from({ length: 30_000 }, () => ({ port: 1, targetPort: 0 })),
      envVars: Array.from({ length: 30_000 }, (_, i) => ({ name: `${i}-bad`, value: 'x' })),
    };
    for (const [field, list] of Object.entries(lists)) {
      const max = field === 'ports' ? 2 : 1000;
      const result = await h.gql(REQUEST, { input: { [field]: list } });
      expect(result.errors).toHaveLength(1);
      expect(result.errors?.[0]?.extensions.code).toBe('BAD_USER_INPUT');
      // One issue for the list as a whole: none of its items was looked at.
      expect(result.errors?.[0]?.extensions.issues).toEqual([
        { path: `input.${field}`, message: `at most ${max} entries (got 30000)` },
      ]);
    }
    // Written in the document rather than in a variable, the same maximum holds.
    const literal = await h.gql(
      'mutation { requestDevServer(input: { ports: [{ port: 443, targetPort: 1 }, { port: 8081, targetPort: 2 }, { port: 443, targetPort: 3 }] }) { isNew } }',
    );
    expect(literal.errors?.[0]?.message).toContain('input.ports: at most 2 entries');
    expect(upstreamRequests(h.sandbox)).toHaveLength(0);
  });

  it('accepts lists up to their maximum', async () => {
    const envVars = Array.from({ length: 1000 }, (_, i) => ({ name: `V${i}`, value: 'x' }));
    const ports = [
      { port: 443, targetPort: 3000 },
      { port: 8081, targetPort: 8081 },
    ];
    const result = await h.gql(REQUEST, { input: { envVars, ports } });
    expect(result.errors).toBeUndefined();
    expect(Object.keys(sent().envVars as object)).toHaveLength(1000);
  });

  it('reports the first ten issues and how many more there were', async () => {
    const envVars = Array.from({ length: 50 }, (_, i) => ({ name: `${i}bad`, value: 'x' }));
    const result = await h.gql(REQUEST, { input: { envVars } });
    const error = result.errors?.[0];
    expect(error?.extensions.issues).toHaveLength(10);
    expect(error?.extensions.moreIssues).toBe(40);
    expect(error?.message).toMatch(/input\.envVars\[9\]\.name: .*; and 40 more issues$/);
  });

  it('names the path of a variable value of the wrong type as the client wrote it', async () => {
    const result = await h.gql(REQUEST, {
      input: { ports: [{ port: 1.5, targetPort: 3000 }], timeout: '10' },
    });
    expect(result.errors?.map((error) => error.extensions.code)).toEqual([
      'BAD_USER_INPUT',
      'BAD_USER_INPUT',
    ]);
    expect(result.errors?.[0]?.message).toContain('"input.ports[0].port"');
    expect(result.errors?.[1]?.message).toContain('"input.timeout"');
    expect(upstreamRequests(h.sandbox, ROUTE)).toHaveLength(0);
  });

  it('answers the upstream 500 body as UPSTREAM_ERROR with its `response` text', async () => {
    h.sandbox.setFault(ROUTE, {
      status: 500,
      body: { response: 'no capacity in region' },
      times: 1,
    });
    const result = await h.gql(REQUEST, { input: { repoId: 'x' } });
    expect(result.errors?.[0]?.extensions).toEqual({
      code: 'UPSTREAM_ERROR',
      upstream: { status: 500, message: 'no capacity in region' },
    });
    expect(result.errors?.[0]?.message).toBe('no capacity in region');
    // A POST is never retried automatically.
    expect(upstreamRequests(h.sandbox, ROUTE)).toHaveLength(1);
  });
});
