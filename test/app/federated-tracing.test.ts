import { Trace } from '@apollo/usage-reporting-protobuf';
import { type GraphQLFieldResolver, isObjectType } from 'graphql';
import { describe, expect, it } from 'vitest';
import { schema } from '../../src/schema/index.js';
import { useHarness } from '../helpers/harness.js';

const ASK = { 'apollo-federation-include-trace': 'ftv1' };
const QUERY = '{ repositories(limit: 2) { total items { id branch: defaultBranch } } }';

/** Every field's resolver of the served schema, as the schema was built. */
function resolvers(): Map<string, GraphQLFieldResolver<unknown, unknown> | undefined> {
  const found = new Map<string, GraphQLFieldResolver<unknown, unknown> | undefined>();
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || type.name.startsWith('__')) continue;
    for (const field of Object.values(type.getFields())) {
      found.set(`${type.name}.${field.name}`, field.resolve);
    }
  }
  return found;
}

// Before any app exists: what the requests that do not ask must keep running.
const built = resolvers();

function decode(ftv1: unknown): Trace {
  expect(typeof ftv1).toBe('string');
  return Trace.decode(Buffer.from(ftv1 as string, 'base64'));
}

/** A node's children by response name (or index), with their own. */
function shape(node: Trace.INode): unknown {
  return Object.fromEntries(
    (node.child ?? []).map((child) => [child.responseName || String(child.index), shape(child)]),
  );
}

describe('federated tracing', () => {
  const h = useHarness();

  it('answers a request that asks with extensions.ftv1, a trace of each field', async () => {
    const answer = await h.gql(QUERY, undefined, ASK);
    expect(answer.errors).toBeUndefined();
    const trace = decode(answer.extensions?.ftv1);
    expect(Number(trace.durationNs)).toBeGreaterThan(0);
    expect(trace.startTime?.seconds).toBeTruthy();
    expect(shape(trace.root ?? {})).toEqual({
      repositories: {
        total: {},
        items: { 0: { id: {}, branch: {} }, 1: { id: {}, branch: {} } },
      },
    });
    const [repositories] = trace.root?.child ?? [];
    expect(repositories).toMatchObject({ type: 'RepositoryPage', parentType: 'Query' });
    expect(Number(repositories?.endTime)).toBeGreaterThanOrEqual(Number(repositories?.startTime));
    const branch = repositories?.child?.[1]?.child?.[0]?.child?.[1];
    expect(branch).toMatchObject({ responseName: 'branch', originalFieldName: 'defaultBranch' });
  });

  it('answers the same data with the trace as without it', async () => {
    const asked = await h.gql(QUERY, undefined, ASK);
    const plain = await h.gql(QUERY);
    expect(asked.data).toEqual(plain.data);
    const introspection = '{ __type(name: "Repository") { fields { name type { name } } } }';
    expect((await h.gql(introspection, undefined, ASK)).data).toEqual(
      (await h.gql(introspection)).data,
    );
  });

  it('puts a field’s error on its node, as masked as the answer', async () => {
    h.sandbox.setFault('GET /git/v1/repo', { status: 404, times: 1 });
    const answer = await h.gql('{ repositories(limit: 2) { total } }', undefined, ASK);
    const [error] = answer.errors ?? [];
    expect(error?.extensions.code).toBe('NOT_FOUND');
    const [node] = decode(answer.extensions?.ftv1).root?.child ?? [];
    expect(node?.responseName).toBe('repositories');
    // The error the gateway reports is the one the caller is answered.
    expect(node?.error?.map((traced) => JSON.parse(traced.json ?? '{}'))).toEqual([error]);
  });

  it('answers no ftv1 to a request that does not ask, and leaves the served schema untouched', async () => {
    const answer = await h.gql(QUERY);
    expect(answer.errors).toBeUndefined();
    expect(answer.extensions ?? {}).not.toHaveProperty('ftv1');
    await h.gql(QUERY, undefined, ASK);
    // The resolvers the untraced requests run (and graphql-jit compiles) are the ones built.
    expect(resolvers()).toEqual(built);
  });

  it('answers no ftv1 with FEDERATED_TRACING=false', async () => {
    const app = h.createApp({ config: { federatedTracing: false } });
    const response = await app.fetch('http://facade/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...ASK },
      body: JSON.stringify({ query: QUERY }),
    });
    const answer = (await response.json()) as { data?: unknown; extensions?: object };
    expect(answer.data).toBeTruthy();
    expect(answer.extensions ?? {}).not.toHaveProperty('ftv1');
  });
});
