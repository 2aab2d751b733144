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
    "\n  query Repositories($limit: Int!, $offset: Int!) {\n    repositories(limit: $limit, offset: $offset) {\n      total\n      offset\n      hasNextPage\n      items {\n        id\n        defaultBranch\n        branches {\n          name\n        }\n        tags {\n          name\n        }\n      }\n    }\n  }\n": typeof types.RepositoriesDocument,
    "\n  mutation CreateDomainVerification($domain: String!) {\n    createDomainVerification(input: { domain: $domain }) {\n      id\n      domain\n      verificationCode\n      dnsRecord {\n        type\n        name\n        value\n      }\n    }\n  }\n": typeof types.CreateDomainVerificationDocument,
    "\n  query DomainDnsCheck($domain: String!, $verificationCode: String) {\n    domainDnsCheck(domain: $domain, verificationCode: $verificationCode) {\n      host\n      values\n      matches\n      error\n    }\n  }\n": typeof types.DomainDnsCheckDocument,
    "\n  mutation VerifyDomain($domain: String!) {\n    verifyDomain(input: { domain: $domain }) {\n      domain\n      verified\n      message\n    }\n  }\n": typeof types.VerifyDomainDocument,
};
const documents: Documents = {
    "\n  query Repositories($limit: Int!, $offset: Int!) {\n    repositories(limit: $limit, offset: $offset) {\n      total\n      offset\n      hasNextPage\n      items {\n        id\n        defaultBranch\n        branches {\n          name\n        }\n        tags {\n          name\n        }\n      }\n    }\n  }\n": types.RepositoriesDocument,
    "\n  mutation CreateDomainVerification($domain: String!) {\n    createDomainVerification(input: { domain: $domain }) {\n      id\n      domain\n      verificationCode\n      dnsRecord {\n        type\n        name\n        value\n      }\n    }\n  }\n": types.CreateDomainVerificationDocument,
    "\n  query DomainDnsCheck($domain: String!, $verificationCode: String) {\n    domainDnsCheck(domain: $domain, verificationCode: $verificationCode) {\n      host\n      values\n      matches\n      error\n    }\n  }\n": types.DomainDnsCheckDocument,
    "\n  mutation VerifyDomain($domain: String!) {\n    verifyDomain(input: { domain: $domain }) {\n      domain\n      verified\n      message\n    }\n  }\n": types.VerifyDomainDocument,
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
export function graphql(source: "\n  query Repositories($limit: Int!, $offset: Int!) {\n    repositories(limit: $limit, offset: $offset) {\n      total\n      offset\n      hasNextPage\n      items {\n        id\n        defaultBranch\n        branches {\n          name\n        }\n        tags {\n          name\n        }\n      }\n    }\n  }\n"): (typeof documents)["\n  query Repositories($limit: Int!, $offset: Int!) {\n    repositories(limit: $limit, offset: $offset) {\n      total\n      offset\n      hasNextPage\n      items {\n        id\n        defaultBranch\n        branches {\n          name\n        }\n        tags {\n          name\n        }\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation CreateDomainVerification($domain: String!) {\n    createDomainVerification(input: { domain: $domain }) {\n      id\n      domain\n      verificationCode\n      dnsRecord {\n        type\n        name\n        value\n      }\n    }\n  }\n"): (typeof documents)["\n  mutation CreateDomainVerification($domain: String!) {\n    createDomainVerification(input: { domain: $domain }) {\n      id\n      domain\n      verificationCode\n      dnsRecord {\n        type\n        name\n        value\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query DomainDnsCheck($domain: String!, $verificationCode: String) {\n    domainDnsCheck(domain: $domain, verificationCode: $verificationCode) {\n      host\n      values\n      matches\n      error\n    }\n  }\n"): (typeof documents)["\n  query DomainDnsCheck($domain: String!, $verificationCode: String) {\n    domainDnsCheck(domain: $domain, verificationCode: $verificationCode) {\n      host\n      values\n      matches\n      error\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation VerifyDomain($domain: String!) {\n    verifyDomain(input: { domain: $domain }) {\n      domain\n      verified\n      message\n    }\n  }\n"): (typeof documents)["\n  mutation VerifyDomain($domain: String!) {\n    verifyDomain(input: { domain: $domain }) {\n      domain\n      verified\n      message\n    }\n  }\n"];

export function graphql(source: string) {
  return (documents as any)[source] ?? {};
}

export type DocumentType<TDocumentNode extends DocumentNode<any, any>> = TDocumentNode extends DocumentNode<  infer TType,  any>  ? TType  : never;