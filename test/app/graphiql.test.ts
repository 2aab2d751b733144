import { parse, validate } from 'graphql';
import { describe, expect, it } from 'vitest';
import { graphiqlTabs } from '../../src/plugins/request/graphiql-tabs.js';
import { schema } from '../../src/schema/index.js';
import { useDnsHarness } from '../helpers/harness.js';

interface Check {
  host: string;
  values: string[];
  matches: boolean | null;
  error: string | null;
}

const HOST = '_service_custom_hostname.example.com';

const live = useDnsHarness();

describe('GraphiQL example', () => {
  it('does include a valid, runnable domainDnsCheck tab', async () => {
    const tab = graphiqlTabs.find((candidate) => candidate.query.includes('domainDnsCheck('));
    expect(tab).toBeDefined();
    const { query, variables } = tab as { query: string; variables: string };
    expect(validate(schema, parse(query))).toEqual([]);
    live.dns.setTxt(HOST, ['svc-verify-abc123']);
    const response = await live.h.gql<{ domainDnsCheck: Check }>(query, JSON.parse(variables));
    expect(response.errors).toBeUndefined();
    expect(response.data?.domainDnsCheck).toMatchObject({
      host: HOST,
      matches: false,
      error: null,
    });
  });
});
