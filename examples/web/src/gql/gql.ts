/* eslint-disable */
import * as types from './graphql';
import type { TypedDocumentNode as DocumentNode } from '@graphql-typed-document-node/core';

/**
 * Map of all GraphQL operations in the project.
 *
 * This map has several performance disadvantages:
 * 1. It is not tree-shakeable, so it will include all operations in the project.
 * 2. It is not minifiable, so the string of a GraphQL query will be multiple times inside the bundle.
 * 3. It does not support dead code elimination, so it will add unused operations.
 *
 * Therefore it is highly recommended to use the babel or swc plugin for production.
 * Learn more about it here: https://the-guild.dev/graphql/codegen/plugins/presets/preset-client#reducing-bundle-size
 */
type Documents = {
    "\n  # One page of repositories: $limit of them after the first $offset.\n  query Repositories($limit: Int = 5, $offset: Int = 0) {\n    repositories(limit: $limit, offset: $offset) {\n      total\n      offset\n      hasNextPage\n      items {\n        id\n        defaultBranch\n        branches {\n          name\n        }\n        tags {\n          name\n        }\n      }\n    }\n  }\n": typeof types.RepositoriesDocument,
    "\n  # The same list as a Relay connection: pass pageInfo.endCursor as $after for the next page.\n  query RepositoriesConnection($first: Int = 3, $after: String) {\n    repositoriesConnection(first: $first, after: $after) {\n      totalCount\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n      edges {\n        cursor\n        node {\n          id\n          defaultBranch\n        }\n      }\n    }\n  }\n": typeof types.RepositoriesConnectionDocument,
    "\n  # Step 1 of verifying a domain: publish dnsRecord at your DNS provider.\n  mutation CreateDomainVerification($domain: String = \"example.com\") {\n    createDomainVerification(input: { domain: $domain }) {\n      id\n      domain\n      verificationCode\n      dnsRecord {\n        type\n        name\n        value\n      }\n    }\n  }\n": typeof types.CreateDomainVerificationDocument,
    "\n  # Step 2: see what DNS answers now (the facade looks it up itself). With the verificationCode\n  # of step 1, matches: true means verifyDomain should succeed; error says why nothing was found.\n  query DomainDnsCheck($domain: String = \"example.com\", $verificationCode: String) {\n    domainDnsCheck(domain: $domain, verificationCode: $verificationCode) {\n      host\n      values\n      matches\n      error\n    }\n  }\n": typeof types.DomainDnsCheckDocument,
    "\n  # Step 2, live: an event now and one at each change of the record, until it matches (the last\n  # event) or the watch ends (\"Watch ended: ...\" in error). Publish the code, then watch it arrive.\n  subscription WatchDomainDns(\n    $domain: String = \"example.com\"\n    $verificationCode: String = \"svc-verify-example\"\n  ) {\n    domainDnsCheck(domain: $domain, verificationCode: $verificationCode) {\n      host\n      values\n      matches\n      error\n    }\n  }\n": typeof types.WatchDomainDnsDocument,
    "\n  # Step 3: ask the upstream to check the record. \"Not yet\" is verified: false with a message.\n  mutation VerifyDomain($domain: String = \"example.com\") {\n    verifyDomain(input: { domain: $domain }) {\n      domain\n      verified\n      message\n    }\n  }\n": typeof types.VerifyDomainDocument,
    "\n  # A dev server: omit ports to expose 3000 on 443, or pass [] to expose nothing.\n  mutation RequestDevServer(\n    $input: RequestDevServerInput = {\n      repoId: \"repo-1\"\n      installCommand: \"npm ci\"\n      devCommand: \"npm run dev\"\n      envVars: [{ name: \"NODE_ENV\", value: \"development\" }]\n      ports: [{ port: 443, targetPort: 3000 }]\n      computeClass: \"low\"\n    }\n  ) {\n    requestDevServer(input: $input) {\n      ephemeralUrl\n      mcpEphemeralUrl\n      isNew\n      devCommandRunning\n      installCommandRunning\n    }\n  }\n": typeof types.RequestDevServerDocument,
};
const documents: Documents = {
    "\n  # One page of repositories: $limit of them after the first $offset.\n  query Repositories($limit: Int = 5, $offset: Int = 0) {\n    repositories(limit: $limit, offset: $offset) {\n      total\n      offset\n      hasNextPage\n      items {\n        id\n        defaultBranch\n        branches {\n          name\n        }\n        tags {\n          name\n        }\n      }\n    }\n  }\n": types.RepositoriesDocument,
    "\n  # The same list as a Relay connection: pass pageInfo.endCursor as $after for the next page.\n  query RepositoriesConnection($first: Int = 3, $after: String) {\n    repositoriesConnection(first: $first, after: $after) {\n      totalCount\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n      edges {\n        cursor\n        node {\n          id\n          defaultBranch\n        }\n      }\n    }\n  }\n": types.RepositoriesConnectionDocument,
    "\n  # Step 1 of verifying a domain: publish dnsRecord at your DNS provider.\n  mutation CreateDomainVerification($domain: String = \"example.com\") {\n    createDomainVerification(input: { domain: $domain }) {\n      id\n      domain\n      verificationCode\n      dnsRecord {\n        type\n        name\n        value\n      }\n    }\n  }\n": types.CreateDomainVerificationDocument,
    "\n  # Step 2: see what DNS answers now (the facade looks it up itself). With the verificationCode\n  # of step 1, matches: true means verifyDomain should succeed; error says why nothing was found.\n  query DomainDnsCheck($domain: String = \"example.com\", $verificationCode: String) {\n    domainDnsCheck(domain: $domain, verificationCode: $verificationCode) {\n      host\n      values\n      matches\n      error\n    }\n  }\n": types.DomainDnsCheckDocument,
    "\n  # Step 2, live: an event now and one at each change of the record, until it matches (the last\n  # event) or the watch ends (\"Watch ended: ...\" in error). Publish the code, then watch it arrive.\n  subscription WatchDomainDns(\n    $domain: String = \"example.com\"\n    $verificationCode: String = \"svc-verify-example\"\n  ) {\n    domainDnsCheck(domain: $domain, verificationCode: $verificationCode) {\n      host\n      values\n      matches\n      error\n    }\n  }\n": types.WatchDomainDnsDocument,
    "\n  # Step 3: ask the upstream to check the record. \"Not yet\" is verified: false with a message.\n  mutation VerifyDomain($domain: String = \"example.com\") {\n    verifyDomain(input: { domain: $domain }) {\n      domain\n      verified\n      message\n    }\n  }\n": types.VerifyDomainDocument,
    "\n  # A dev server: omit ports to expose 3000 on 443, or pass [] to expose nothing.\n  mutation RequestDevServer(\n    $input: RequestDevServerInput = {\n      repoId: \"repo-1\"\n      installCommand: \"npm ci\"\n      devCommand: \"npm run dev\"\n      envVars: [{ name: \"NODE_ENV\", value: \"development\" }]\n      ports: [{ port: 443, targetPort: 3000 }]\n      computeClass: \"low\"\n    }\n  ) {\n    requestDevServer(input: $input) {\n      ephemeralUrl\n      mcpEphemeralUrl\n      isNew\n      devCommandRunning\n      installCommandRunning\n    }\n  }\n": types.RequestDevServerDocument,
};

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 *
 *
 * @example
 * ```ts
 * const query = graphql(`query GetUser($id: ID!) { user(id: $id) { name } }`);
 * ```
 *
 * The query argument is unknown!
 * Please regenerate the types.
 */
export function graphql(source: string): unknown;

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  # One page of repositories: $limit of them after the first $offset.\n  query Repositories($limit: Int = 5, $offset: Int = 0) {\n    repositories(limit: $limit, offset: $offset) {\n      total\n      offset\n      hasNextPage\n      items {\n        id\n        defaultBranch\n        branches {\n          name\n        }\n        tags {\n          name\n        }\n      }\n    }\n  }\n"): (typeof documents)["\n  # One page of repositories: $limit of them after the first $offset.\n  query Repositories($limit: Int = 5, $offset: Int = 0) {\n    repositories(limit: $limit, offset: $offset) {\n      total\n      offset\n      hasNextPage\n      items {\n        id\n        defaultBranch\n        branches {\n          name\n        }\n        tags {\n          name\n        }\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  # The same list as a Relay connection: pass pageInfo.endCursor as $after for the next page.\n  query RepositoriesConnection($first: Int = 3, $after: String) {\n    repositoriesConnection(first: $first, after: $after) {\n      totalCount\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n      edges {\n        cursor\n        node {\n          id\n          defaultBranch\n        }\n      }\n    }\n  }\n"): (typeof documents)["\n  # The same list as a Relay connection: pass pageInfo.endCursor as $after for the next page.\n  query RepositoriesConnection($first: Int = 3, $after: String) {\n    repositoriesConnection(first: $first, after: $after) {\n      totalCount\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n      edges {\n        cursor\n        node {\n          id\n          defaultBranch\n        }\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  # Step 1 of verifying a domain: publish dnsRecord at your DNS provider.\n  mutation CreateDomainVerification($domain: String = \"example.com\") {\n    createDomainVerification(input: { domain: $domain }) {\n      id\n      domain\n      verificationCode\n      dnsRecord {\n        type\n        name\n        value\n      }\n    }\n  }\n"): (typeof documents)["\n  # Step 1 of verifying a domain: publish dnsRecord at your DNS provider.\n  mutation CreateDomainVerification($domain: String = \"example.com\") {\n    createDomainVerification(input: { domain: $domain }) {\n      id\n      domain\n      verificationCode\n      dnsRecord {\n        type\n        name\n        value\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  # Step 2: see what DNS answers now (the facade looks it up itself). With the verificationCode\n  # of step 1, matches: true means verifyDomain should succeed; error says why nothing was found.\n  query DomainDnsCheck($domain: String = \"example.com\", $verificationCode: String) {\n    domainDnsCheck(domain: $domain, verificationCode: $verificationCode) {\n      host\n      values\n      matches\n      error\n    }\n  }\n"): (typeof documents)["\n  # Step 2: see what DNS answers now (the facade looks it up itself). With the verificationCode\n  # of step 1, matches: true means verifyDomain should succeed; error says why nothing was found.\n  query DomainDnsCheck($domain: String = \"example.com\", $verificationCode: String) {\n    domainDnsCheck(domain: $domain, verificationCode: $verificationCode) {\n      host\n      values\n      matches\n      error\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  # Step 2, live: an event now and one at each change of the record, until it matches (the last\n  # event) or the watch ends (\"Watch ended: ...\" in error). Publish the code, then watch it arrive.\n  subscription WatchDomainDns(\n    $domain: String = \"example.com\"\n    $verificationCode: String = \"svc-verify-example\"\n  ) {\n    domainDnsCheck(domain: $domain, verificationCode: $verificationCode) {\n      host\n      values\n      matches\n      error\n    }\n  }\n"): (typeof documents)["\n  # Step 2, live: an event now and one at each change of the record, until it matches (the last\n  # event) or the watch ends (\"Watch ended: ...\" in error). Publish the code, then watch it arrive.\n  subscription WatchDomainDns(\n    $domain: String = \"example.com\"\n    $verificationCode: String = \"svc-verify-example\"\n  ) {\n    domainDnsCheck(domain: $domain, verificationCode: $verificationCode) {\n      host\n      values\n      matches\n      error\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  # Step 3: ask the upstream to check the record. \"Not yet\" is verified: false with a message.\n  mutation VerifyDomain($domain: String = \"example.com\") {\n    verifyDomain(input: { domain: $domain }) {\n      domain\n      verified\n      message\n    }\n  }\n"): (typeof documents)["\n  # Step 3: ask the upstream to check the record. \"Not yet\" is verified: false with a message.\n  mutation VerifyDomain($domain: String = \"example.com\") {\n    verifyDomain(input: { domain: $domain }) {\n      domain\n      verified\n      message\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  # A dev server: omit ports to expose 3000 on 443, or pass [] to expose nothing.\n  mutation RequestDevServer(\n    $input: RequestDevServerInput = {\n      repoId: \"repo-1\"\n      installCommand: \"npm ci\"\n      devCommand: \"npm run dev\"\n      envVars: [{ name: \"NODE_ENV\", value: \"development\" }]\n      ports: [{ port: 443, targetPort: 3000 }]\n      computeClass: \"low\"\n    }\n  ) {\n    requestDevServer(input: $input) {\n      ephemeralUrl\n      mcpEphemeralUrl\n      isNew\n      devCommandRunning\n      installCommandRunning\n    }\n  }\n"): (typeof documents)["\n  # A dev server: omit ports to expose 3000 on 443, or pass [] to expose nothing.\n  mutation RequestDevServer(\n    $input: RequestDevServerInput = {\n      repoId: \"repo-1\"\n      installCommand: \"npm ci\"\n      devCommand: \"npm run dev\"\n      envVars: [{ name: \"NODE_ENV\", value: \"development\" }]\n      ports: [{ port: 443, targetPort: 3000 }]\n      computeClass: \"low\"\n    }\n  ) {\n    requestDevServer(input: $input) {\n      ephemeralUrl\n      mcpEphemeralUrl\n      isNew\n      devCommandRunning\n      installCommandRunning\n    }\n  }\n"];

export function graphql(source: string) {
  return (documents as any)[source] ?? {};
}

export type DocumentType<TDocumentNode extends DocumentNode<any, any>> = TDocumentNode extends DocumentNode<  infer TType,  any>  ? TType  : never;