import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { catalogTypeDefs, createCatalogApp, ownerOf } from '../../examples/catalog-subgraph.js';
import {
  CompositionFailedError,
  composeSupergraph,
  type SubgraphSource,
} from '../../scripts/supergraph.js';
import { compose } from '../helpers/composers.js';
import { type Gateway, startGateway, startHiveGateway } from '../helpers/gateway.js';
import { postGraphQL, useHarness } from '../helpers/harness.js';
import { type Listening, listen } from '../helpers/net.js';
import {
  createRelayApp,
  facadeSelection,
  neighbourAnswer,
  spanningQuery,
} from '../helpers/relay-subgraph.js';

const HEADERS = { authorization: 'Bearer federation-test', 'x-request-id': 'federation-test-1' };

const post = <T = Record<string, unknown>>(url: string, query: string) =>
  postGraphQL<T>(url, query, undefined, HEADERS);

async function fetchSdl(url: string): Promise<string> {
  const { data } = await post<{ _service: { sdl: string } }>(url, '{ _service { sdl } }');
  if (!data) throw new Error(`no _service { sdl } from ${url}`);
  return data._service.sdl;
}

describe('federation', () => {
  const harness = useHarness();
  let facade: Listening;
  let catalog: Listening;
  let gateway: Gateway;
  let subgraphs: SubgraphSource[];

  beforeAll(async () => {
    facade = await listen(harness.app);
    catalog = await listen(createCatalogApp());
    // Composed from what the running subgraphs answer, as a gateway polling them would.
    subgraphs = [
      { name: 'facade', url: facade.url, sdl: await fetchSdl(facade.url) },
      { name: 'catalog', url: catalog.url, sdl: await fetchSdl(catalog.url) },
    ];
    gateway = await startGateway(composeSupergraph(subgraphs));
  });

  afterAll(async () => {
    await Promise.allSettled([gateway?.close(), catalog?.close(), facade?.close()]);
  });

  /** Runs one operation and returns its answer with the upstream requests it caused. */
  async function upstreamSeen(url: string, query: string) {
    harness.sandbox.clearRequests();
    const answer = await post(url, query);
    const seen = harness.sandbox.requests().map(({ method, path, query, body, headers }) => ({
      route: `${method} ${path}`,
      query,
      body,
      authorization: headers.authorization,
      requestId: headers['x-request-id'],
    }));
    return { answer, seen };
  }

  it('answers _service { sdl } with keys that say the facade cannot fetch by key', () => {
    const sdl = subgraphs[0]?.sdl ?? '';
    // The version every composer accepts (test/app/composition.test.ts).
    expect(sdl).toMatch(
      /@link\(url: "https:\/\/specs\.apollo\.dev\/federation\/v2\.9", import: \["@key", "@shareable"/,
    );
    expect(sdl).toMatch(/type Repository\s+@key\(fields: "id", resolvable: false\)/);
    expect(sdl).toMatch(/type DomainVerification\s+@key\(fields: "id", resolvable: false\)/);
    // Nothing is resolvable by key, so there is no `_entities` for a gateway to call.
    expect(sdl).not.toContain('_entities');
  });

  it('runs a query spanning both subgraphs with the upstream requests of the facade alone', async () => {
    const direct = await upstreamSeen(
      facade.url,
      '{ repositories(limit: 3) { total items { id defaultBranch } } }',
    );
    const { answer, seen } = await upstreamSeen(
      gateway.url,
      '{ repositories(limit: 3) { total items { id defaultBranch owner { name channel } } } teams { name } }',
    );
    expect(answer.errors).toBeUndefined();
    const data = answer.data as {
      repositories: { items: Array<{ id: string; owner: { name: string } }> };
      teams: Array<{ name: string }>;
    };
    expect(data.repositories.items).toHaveLength(3);
    for (const item of data.repositories.items) expect(item.owner.name).toBe(ownerOf(item.id).name);
    expect(data.teams.length).toBeGreaterThan(0);
    expect(direct.seen).toHaveLength(1);
    expect(seen).toEqual(direct.seen);
    // The gateway forwarded the caller's credentials and request id.
    expect(seen[0]).toMatchObject({
      authorization: HEADERS.authorization,
      requestId: HEADERS['x-request-id'],
    });
  });

  const mutations = [
    {
      name: 'createDomainVerification',
      query: (extra = '') =>
        `mutation { createDomainVerification(input: { domain: "Federation.Example.COM" }) { id domain dnsRecord { name } ${extra} } }`,
      // Spans both subgraphs: the catalog adds its field to the facade's entity.
      extra: 'changeTicket',
      check: (result: Record<string, unknown>) =>
        expect(result.changeTicket).toBe(`CHG-${String(result.id)}`),
    },
    {
      name: 'verifyDomain',
      // Never created: the upstream answers 404 at once, which the facade reports as not verified.
      query: () =>
        'mutation { verifyDomain(input: { domain: "never-created.example" }) { domain verified message } }',
      check: (result: Record<string, unknown>) => expect(result).toMatchObject({ verified: false }),
    },
    {
      name: 'requestDevServer',
      query: () =>
        'mutation { requestDevServer(input: { repoId: "repo-1", ports: [{ port: 443, targetPort: 3000 }], envVars: [{ name: "A", value: "1" }] }) { ephemeralUrl isNew } }',
      check: (result: Record<string, unknown>) => expect(typeof result.ephemeralUrl).toBe('string'),
    },
  ];

  it.each(mutations)(
    'runs $name through the gateway with the upstream requests of the facade alone',
    async (mutation) => {
      const direct = await upstreamSeen(facade.url, mutation.query());
      const { answer, seen } = await upstreamSeen(gateway.url, mutation.query(mutation.extra));
      expect(answer.errors).toBeUndefined();
      const data = (answer.data ?? {}) as Record<string, Record<string, unknown> | undefined>;
      mutation.check(data[mutation.name] ?? {});
      expect(direct.seen).toHaveLength(1);
      expect(seen).toEqual(direct.seen);
    },
  );

  describe('through Apollo Gateway and Hive Gateway', () => {
    // Each supergraph that a gateway in the npm registry serves: @apollo/composition's and the
    // Guild's. Cosmo's composition (test/app/composition.test.ts) is router configuration for
    // Cosmo's own router, which is not an npm package.
    const composers = ['apollo', 'guild'] as const;
    const sets = ['alone', 'beside the Relay-style neighbour'] as const;
    const gateways = { 'Apollo Gateway': startGateway, 'Hive Gateway': startHiveGateway };
    const cases = composers.flatMap((composer) =>
      sets.flatMap((set) =>
        (Object.keys(gateways) as Array<keyof typeof gateways>).map((gateway) => ({
          composer,
          set,
          gateway,
        })),
      ),
    );
    const supergraphs = new Map<string, string>();
    let relay: Listening;

    beforeAll(async () => {
      relay = await listen(createRelayApp());
      const neighbour = { name: 'relay', url: relay.url, sdl: await fetchSdl(relay.url) };
      for (const composer of composers) {
        for (const set of sets) {
          const facadeSource = subgraphs[0] as SubgraphSource;
          const result = compose(
            composer,
            set === 'alone' ? [facadeSource] : [facadeSource, neighbour],
          );
          if (!result.supergraphSdl) {
            throw new Error(
              `${composer} did not compose the facade ${set}:\n${result.errors.join('\n')}`,
            );
          }
          supergraphs.set(`${composer} ${set}`, result.supergraphSdl);
        }
      }
    });

    afterAll(async () => {
      await relay?.close();
    });

    it.each(cases)(
      'answers through $gateway from the $composer supergraph, $set, with the facade’s own upstream requests',
      async ({ composer, set, gateway }) => {
        const served = await gateways[gateway](supergraphs.get(`${composer} ${set}`) ?? '');
        try {
          const direct = await upstreamSeen(facade.url, `{${facadeSelection}\n}`);
          expect(direct.answer.errors).toBeUndefined();
          expect(direct.seen.length).toBeGreaterThan(0);
          const query = set === 'alone' ? `{${facadeSelection}\n}` : spanningQuery;
          const { answer, seen } = await upstreamSeen(served.url, query);
          expect(answer.errors).toBeUndefined();
          expect(answer.data).toEqual({
            ...direct.answer.data,
            ...(set === 'alone' ? {} : neighbourAnswer),
          });
          const data = answer.data as { repositoriesConnection: { edges: unknown[] } };
          expect(data.repositoriesConnection.edges).toHaveLength(2);
          // The facade's share, as one operation with the caller's credentials and request id.
          const byRoute = (
            a: { route: string; query: unknown },
            b: { route: string; query: unknown },
          ) => JSON.stringify(a).localeCompare(JSON.stringify(b));
          expect(seen.sort(byRoute)).toEqual(direct.seen.sort(byRoute));
          for (const request of seen) {
            expect(request).toMatchObject({
              authorization: HEADERS.authorization,
              requestId: HEADERS['x-request-id'],
            });
          }
        } finally {
          await served.close();
        }
      },
    );
  });

  it('passes the caller’s trace through the gateway and the facade to the REST API', async () => {
    const traceId = '5b8efff798038103d269b633813fc60c';
    harness.sandbox.clearRequests();
    const answer = await postGraphQL(
      gateway.url,
      '{ repositories(limit: 2) { total } }',
      undefined,
      {
        ...HEADERS,
        traceparent: `00-${traceId}-eee19b7ec3c1b174-01`,
      },
    );
    expect(answer.errors).toBeUndefined();
    const sent = harness.sandbox.requests().map((request) => request.headers.traceparent);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatch(new RegExp(`^00-${traceId}-[\\da-f]{16}-01$`));
  });

  it('hands the gateway the facade’s federated trace (ftv1) when it asks', async () => {
    gateway.lastFtv1 = [];
    const answer = await post(
      gateway.url,
      '{ repositories(limit: 1) { items { id owner { name } } } teams { name } }',
    );
    expect(answer.errors).toBeUndefined();
    // Decoded by the gateway itself: it would report these to Apollo's usage reporting.
    const facadeTraces = gateway.lastFtv1.filter((trace) => trace.serviceName === 'facade');
    expect(facadeTraces).toEqual([{ serviceName: 'facade', rootFields: ['repositories'] }]);
    // The gateway passes no ftv1 on to its own client.
    expect(answer.extensions ?? {}).not.toHaveProperty('ftv1');
  });

  it('answers ftv1 only to a request that asks for it', async () => {
    const query = '{ repositories(limit: 1) { total } }';
    const plain = await post(facade.url, query);
    expect(plain.extensions ?? {}).not.toHaveProperty('ftv1');
    const asked = await postGraphQL(facade.url, query, undefined, {
      ...HEADERS,
      'apollo-federation-include-trace': 'ftv1',
    });
    expect(typeof asked.extensions?.ftv1).toBe('string');
  });

  it('passes the facade’s validation errors through with their code and path, and calls nothing upstream', async () => {
    const { answer, seen } = await upstreamSeen(
      gateway.url,
      'mutation { requestDevServer(input: { ports: [{ port: 80, targetPort: 3000 }] }) { ephemeralUrl } }',
    );
    expect(answer.errors?.[0]?.extensions.code).toBe('BAD_USER_INPUT');
    expect(answer.errors?.[0]?.message).toContain('input.ports[0].port');
    expect(seen).toEqual([]);
  });

  it('fails with composition’s own errors when a subgraph needs what the facade cannot fetch by key', () => {
    // A subgraph that returns repositories of its own would need the facade to resolve them by id.
    const greedy = catalogTypeDefs.replace(
      'teams: [Team!]!',
      'teams: [Team!]!\n  favourite: Repository',
    );
    const attempt = () =>
      composeSupergraph([
        subgraphs[0] as SubgraphSource,
        { name: 'catalog', url: catalog.url, sdl: greedy },
      ]);
    expect(attempt).toThrow(CompositionFailedError);
    try {
      attempt();
    } catch (error) {
      const codes = (error as CompositionFailedError).errors.map((e) => e.extensions.code);
      expect(codes).toContain('SATISFIABILITY_ERROR');
      expect((error as Error).message).toContain('SATISFIABILITY_ERROR');
    }
  });

  it('writes a supergraph of the facade and the catalog with `npm run supergraph`', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'supergraph-'));
    const out = join(dir, 'supergraph.graphql');
    try {
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', 'scripts/supergraph.ts', '--out', out],
        {
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      const code = await new Promise<number | null>((resolve, reject) => {
        const timer = setTimeout(() => {
          child.kill('SIGKILL');
          reject(new Error(`scripts/supergraph.ts took over 20 s: ${stderr}`));
        }, 20_000);
        child.on('exit', (exitCode) => {
          clearTimeout(timer);
          resolve(exitCode);
        });
      });
      expect(code, stderr).toBe(0);
      const supergraph = readFileSync(out, 'utf8');
      expect(supergraph).toContain(
        'FACADE @join__graph(name: "facade", url: "http://localhost:4000/graphql")',
      );
      expect(supergraph).toContain(
        'CATALOG @join__graph(name: "catalog", url: "http://localhost:4001/graphql")',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);

  it('serves the supergraph it writes with `npm run supergraph -- --serve`', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'supergraph-'));
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'scripts/supergraph.ts',
        '--serve',
        '--port',
        '0',
        '--out',
        join(dir, 'supergraph.graphql'),
        '--facade-url',
        facade.url,
        '--catalog-url',
        catalog.url,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise<number | string | null>((resolve) =>
      child.on('exit', (code, signal) => resolve(code ?? signal)),
    );
    try {
      await expect
        .poll(() => /serving the supergraph at (\S+)/.exec(stdout)?.[1], { timeout: 20_000 })
        .toMatch(/^http:\/\/127\.0\.0\.1:\d+\/graphql$/);
      const url = /serving the supergraph at (\S+)/.exec(stdout)?.[1] ?? '';
      const { answer, seen } = await upstreamSeen(
        url,
        '{ repositories(limit: 2) { total items { id owner { name } } } teams { name } }',
      );
      expect(answer.errors, stderr).toBeUndefined();
      const data = answer.data as {
        repositories: { items: Array<{ id: string; owner: { name: string } }> };
      };
      for (const item of data.repositories.items)
        expect(item.owner.name).toBe(ownerOf(item.id).name);
      // What the facade needs from a gateway reached it, and the upstream.
      expect(seen).toEqual([
        expect.objectContaining({
          authorization: HEADERS.authorization,
          requestId: HEADERS['x-request-id'],
        }),
      ]);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }, 40_000);
});
