import { graphql } from './gql/index.js';

// The page's operations. `npm run example:web:codegen` turns them into typed documents (./gql)
// and the trusted-documents manifest the facade runs them from (gql/persisted-documents.json).

export const RepositoriesQuery = graphql(`
  query Repositories($limit: Int!, $offset: Int!) {
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

export const CreateDomainVerificationMutation = graphql(`
  mutation CreateDomainVerification($domain: String!) {
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
  query DomainDnsCheck($domain: String!, $verificationCode: String) {
    domainDnsCheck(domain: $domain, verificationCode: $verificationCode) {
      host
      values
      matches
      error
    }
  }
`);

export const VerifyDomainMutation = graphql(`
  mutation VerifyDomain($domain: String!) {
    verifyDomain(input: { domain: $domain }) {
      domain
      verified
      message
    }
  }
`);
