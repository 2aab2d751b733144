import { parse, validate } from 'graphql';
import { describe, expect, it } from 'vitest';
import { graphiqlTabs } from '../../src/plugins/request/graphiql-tabs.js';
import { schema } from '../../src/schema/index.js';
import { useDnsHarness } from '../helpers/harness.js';

const live = useDnsHarness();

describe('GraphiQL tabs', () => {
  it('includes a valid, runnable domainDnsCheck tab', async () => {
    const tab = graphiqlTabs.find((candidate) => candidate.query.includes('domainDnsCheck('));
    expect(tab).toBeDefined();
    const { query, variables } = tab as { query: string; variables: string };
    expect(validate(schema, parse(query))).toEqual([]);
    live.dns.setTxt('_service_custom_hostname.example.com', ['svc-verify-abc123']);
    const response = await live.h.gql<{ domainDnsCheck: unknown }>(query, JSON.parse(variables));
    expect(response.errors).toBeUndefined();
    expect(response.data?.domainDnsCheck).toMatchObject({
      host: '_service_custom_hostname.example.com',
      matches: false,
      error: null,
    });
  });
});
