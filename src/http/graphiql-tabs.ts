// The tabs GraphiQL opens with: one runnable example per root field, against the sandbox's data.

const tab = (query: string, variables?: Record<string, unknown>) => ({
  query: query.trim(),
  variables: variables ? JSON.stringify(variables, null, 2) : null,
});

export const graphiqlTabs = [
  tab(
    `
# One page of repositories. Omit limit/offset to get the upstream's defaults.
query Repositories($limit: Int = 5, $offset: Int = 0) {
  repositories(limit: $limit, offset: $offset) {
    total
    offset
    hasNextPage
    items {
      id
      defaultBranch
      branches { name target isDefault }
      branch(name: "main") { target }
      tags { name target message }
    }
  }
}`,
    { limit: 5, offset: 0 },
  ),
  tab(
    `
# The same list as a Relay connection: pass pageInfo.endCursor as $after for the next page.
query RepositoriesConnection($first: Int = 3, $after: String) {
  repositoriesConnection(first: $first, after: $after) {
    totalCount
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    edges { cursor node { id defaultBranch } }
  }
}`,
    { first: 3 },
  ),
  tab(
    `
# Step 1 of verifying a domain: publish dnsRecord at your DNS provider.
mutation CreateDomainVerification($domain: String!) {
  createDomainVerification(input: { domain: $domain }) {
    id
    domain
    verificationCode
    createdAt
    dnsRecord { type name value }
  }
}`,
    { domain: 'example.com' },
  ),
  tab(
    `
# Step 2: after publishing dnsRecord, see what DNS answers now (the facade looks it up itself).
# matches: true means verifyDomain should succeed; error says in plain words why nothing was found.
query DomainDnsCheck($domain: String!, $verificationCode: String) {
  domainDnsCheck(domain: $domain, verificationCode: $verificationCode) {
    host
    values
    matches
    error
  }
}`,
    { domain: 'example.com', verificationCode: 'paste the verificationCode from step 1' },
  ),
  tab(
    `
# Step 3: ask the upstream to check the record. "Not yet" is verified: false with a message.
mutation VerifyDomain($domain: String!) {
  verifyDomain(input: { domain: $domain }) { domain verified message }
}`,
    { domain: 'example.com' },
  ),
  tab(
    `
# A dev server: omit ports to expose 3000 on 443, or pass [] to expose nothing.
mutation RequestDevServer($input: RequestDevServerInput!) {
  requestDevServer(input: $input) {
    ephemeralUrl
    mcpEphemeralUrl
    isNew
    devCommandRunning
    installCommandRunning
  }
}`,
    {
      input: {
        repoId: 'repo-1',
        installCommand: 'npm ci',
        devCommand: 'npm run dev',
        envVars: [{ name: 'NODE_ENV', value: 'development' }],
        ports: [{ port: 443, targetPort: 3000 }],
        computeClass: 'low',
      },
    },
  ),
];
