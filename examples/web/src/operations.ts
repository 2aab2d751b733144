import { graphql } from './gql/index.js';

// The page's operations, and the facade's GraphiQL tabs, in this order. `npm run
// example:web:codegen` turns them into typed documents (./gql), the trusted-documents manifest the
// facade runs them from (gql/persisted-documents.json) and GraphiQL's tabs
// (src/http/graphiql-tabs.json). One for every root field: GraphiQL opens with an example of each.
// Every variable has a default, so that a tab runs as it opens; the page passes its own values.

export const RepositoriesQuery = graphql(`
  # One page of repositories: $limit of them after the first $offset.
  query Repositories($limit: Int = 5, $offset: Int = 0) {
    repositories(limit: $limit, offset: $offset) {
      total
      offset
      hasNextPage
      items {
        id
        defaultBranch
        branches {
          name
        }
        tags {
          name
        }
      }
    }
  }
`);

export const RepositoriesConnectionQuery = graphql(`
  # The same list as a Relay connection: pass pageInfo.endCursor as $after for the next page.
  query RepositoriesConnection($first: Int = 3, $after: String) {
    repositoriesConnection(first: $first, after: $after) {
      totalCount
      pageInfo {
        hasNextPage
        endCursor
      }
      edges {
        cursor
        node {
          id
          defaultBranch
        }
      }
    }
  }
`);

export const CreateDomainVerificationMutation = graphql(`
  # Step 1 of verifying a domain: publish dnsRecord at your DNS provider.
  mutation CreateDomainVerification($domain: String = "example.com") {
    createDomainVerification(input: { domain: $domain }) {
      id
      domain
      verificationCode
      dnsRecord {
        type
        name
        value
      }
    }
  }
`);

export const DomainDnsCheckQuery = graphql(`
  # Step 2: see what DNS answers now (the facade looks it up itself). With the verificationCode
  # of step 1, matches: true means verifyDomain should succeed; error says why nothing was found.
  query DomainDnsCheck($domain: String = "example.com", $verificationCode: String) {
    domainDnsCheck(domain: $domain, verificationCode: $verificationCode) {
      host
      values
      matches
      error
    }
  }
`);

export const WatchDomainDnsSubscription = graphql(`
  # Step 2, live: an event now and one at each change of the record, until it matches (the last
  # event) or the watch ends ("Watch ended: ..." in error). Publish the code, then watch it arrive.
  subscription WatchDomainDns(
    $domain: String = "example.com"
    $verificationCode: String = "svc-verify-example"
  ) {
    domainDnsCheck(domain: $domain, verificationCode: $verificationCode) {
      host
      values
      matches
      error
    }
  }
`);

export const VerifyDomainMutation = graphql(`
  # Step 3: ask the upstream to check the record. "Not yet" is verified: false with a message.
  mutation VerifyDomain($domain: String = "example.com") {
    verifyDomain(input: { domain: $domain }) {
      domain
      verified
      message
    }
  }
`);

export const RequestDevServerMutation = graphql(`
  # A dev server: omit ports to expose 3000 on 443, or pass [] to expose nothing.
  mutation RequestDevServer(
    $input: RequestDevServerInput = {
      repoId: "repo-1"
      installCommand: "npm ci"
      devCommand: "npm run dev"
      envVars: [{ name: "NODE_ENV", value: "development" }]
      ports: [{ port: 443, targetPort: 3000 }]
      computeClass: "low"
    }
  ) {
    requestDevServer(input: $input) {
      ephemeralUrl
      mcpEphemeralUrl
      isNew
      devCommandRunning
      installCommandRunning
    }
  }
`);
