/* eslint-disable */
/** Internal type. DO NOT USE DIRECTLY. */
type Exact<T extends { [key: string]: unknown }> = { [K in keyof T]: T[K] };
/** Internal type. DO NOT USE DIRECTLY. */
export type Incremental<T> = T | { [P in keyof T]?: P extends ' $fragmentName' | '__typename' ? T[P] : never };
import type { TypedDocumentNode as DocumentNode } from '@graphql-typed-document-node/core';
/** An environment variable of the dev server. */
export type EnvVarInput = {
  /** The variable name: letters, digits and underscores, not starting with a digit. */
  name: string;
  /** The value. */
  value: string;
};

/** An external port of the dev server and the port inside it that it forwards to. */
export type PortMappingInput = {
  /** The externally exposed port: 443 or 8081. */
  port: number;
  /** The port inside the dev server (1-65535). */
  targetPort: number;
};

/** What to run in the dev server. An omitted field is not sent upstream; null is sent as null; `ports: []` exposes nothing, while omitted ports expose 3000 on 443. */
export type RequestDevServerInput = {
  /**
   * Deprecated upstream.
   * @deprecated Deprecated by the upstream API; use repoId.
   */
  baseId?: string | null | undefined;
  /** The compute class, e.g. "high" (the upstream default) or "low"; non-empty when given. */
  computeClass?: string | null | undefined;
  /** The command that runs the dev server. */
  devCommand?: string | null | undefined;
  /**
   * Deprecated upstream.
   * @deprecated Deprecated by the upstream API.
   */
  domain?: string | null | undefined;
  /** Environment variables, at most 1000; names are unique. Sent upstream as an object. */
  envVars?: Array<EnvVarInput> | null | undefined;
  /** The git ref to check out (non-empty when given). */
  gitRef?: string | null | undefined;
  /** The command that installs dependencies. */
  installCommand?: string | null | undefined;
  /** External port mappings, at most 2; each external port at most once. */
  ports?: Array<PortMappingInput> | null | undefined;
  /** A command run once before the first dev command. */
  preDevCommandOnce?: string | null | undefined;
  /**
   * Deprecated upstream.
   * @deprecated Deprecated by the upstream API; use repoId.
   */
  repo?: string | null | undefined;
  /** The repository to start from (non-empty when given). */
  repoId?: string | number | null | undefined;
  /** Seconds before the dev server stops (>= 0). */
  timeout?: number | null | undefined;
};

export type RepositoriesQueryVariables = Exact<{
  limit?: number | null | undefined;
  offset?: number | null | undefined;
}>;


export type RepositoriesQuery = { __typename: 'Query', repositories: { __typename: 'RepositoryPage', total: number, offset: number, hasNextPage: boolean, items: Array<{ __typename: 'Repository', id: string | null, defaultBranch: string | null, branches: Array<{ __typename: 'Branch', name: string }>, tags: Array<{ __typename: 'Tag', name: string }> }> } | null };

export type RepositoriesConnectionQueryVariables = Exact<{
  first?: number | null | undefined;
  after?: string | null | undefined;
}>;


export type RepositoriesConnectionQuery = { __typename: 'Query', repositoriesConnection: { __typename: 'RepositoryConnection', totalCount: number, pageInfo: { __typename: 'PageInfo', hasNextPage: boolean, endCursor: string | null }, edges: Array<{ __typename: 'RepositoryEdge', cursor: string, node: { __typename: 'Repository', id: string | null, defaultBranch: string | null } }> } | null };

export type CreateDomainVerificationMutationVariables = Exact<{
  domain?: string | null | undefined;
}>;


export type CreateDomainVerificationMutation = { __typename: 'Mutation', createDomainVerification: { __typename: 'DomainVerification', id: string, domain: string, verificationCode: string, dnsRecord: { __typename: 'DnsRecord', type: string, name: string, value: string } } };

export type DomainDnsCheckQueryVariables = Exact<{
  domain?: string | null | undefined;
  verificationCode?: string | null | undefined;
}>;


export type DomainDnsCheckQuery = { __typename: 'Query', domainDnsCheck: { __typename: 'DomainDnsCheck', host: string, values: Array<string>, matches: boolean | null, error: string | null } };

export type WatchDomainDnsSubscriptionVariables = Exact<{
  domain?: string | null | undefined;
  verificationCode?: string | null | undefined;
}>;


export type WatchDomainDnsSubscription = { domainDnsCheck: { __typename: 'DomainDnsCheck', host: string, values: Array<string>, matches: boolean | null, error: string | null } };

export type VerifyDomainMutationVariables = Exact<{
  domain?: string | null | undefined;
}>;


export type VerifyDomainMutation = { __typename: 'Mutation', verifyDomain: { __typename: 'DomainVerificationResult', domain: string, verified: boolean, message: string | null } };

export type RequestDevServerMutationVariables = Exact<{
  input?: RequestDevServerInput | null | undefined;
}>;


export type RequestDevServerMutation = { __typename: 'Mutation', requestDevServer: { __typename: 'DevServer', ephemeralUrl: string | null, mcpEphemeralUrl: string | null, isNew: boolean, devCommandRunning: boolean, installCommandRunning: boolean } };


export const RepositoriesDocument = {"__meta__":{"hash":"sha256:8e21130d4d400afe3105b9dc1e461fe2d33bd701692919750e96765295c0ca59"},"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"query","name":{"kind":"Name","value":"Repositories"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"limit"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"Int"}},"defaultValue":{"kind":"IntValue","value":"5"}},{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"offset"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"Int"}},"defaultValue":{"kind":"IntValue","value":"0"}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"__typename"}},{"kind":"Field","name":{"kind":"Name","value":"repositories"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"limit"},"value":{"kind":"Variable","name":{"kind":"Name","value":"limit"}}},{"kind":"Argument","name":{"kind":"Name","value":"offset"},"value":{"kind":"Variable","name":{"kind":"Name","value":"offset"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"__typename"}},{"kind":"Field","name":{"kind":"Name","value":"total"}},{"kind":"Field","name":{"kind":"Name","value":"offset"}},{"kind":"Field","name":{"kind":"Name","value":"hasNextPage"}},{"kind":"Field","name":{"kind":"Name","value":"items"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"__typename"}},{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"defaultBranch"}},{"kind":"Field","name":{"kind":"Name","value":"branches"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"__typename"}},{"kind":"Field","name":{"kind":"Name","value":"name"}}]}},{"kind":"Field","name":{"kind":"Name","value":"tags"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"__typename"}},{"kind":"Field","name":{"kind":"Name","value":"name"}}]}}]}}]}}]}}]} as unknown as DocumentNode<RepositoriesQuery, RepositoriesQueryVariables>;
export const RepositoriesConnectionDocument = {"__meta__":{"hash":"sha256:68e0b3874ad20c36e289628a7e2d05aa4f679ee5785df34525becb2ff197a5d1"},"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"query","name":{"kind":"Name","value":"RepositoriesConnection"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"first"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"Int"}},"defaultValue":{"kind":"IntValue","value":"3"}},{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"after"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"String"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"__typename"}},{"kind":"Field","name":{"kind":"Name","value":"repositoriesConnection"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"first"},"value":{"kind":"Variable","name":{"kind":"Name","value":"first"}}},{"kind":"Argument","name":{"kind":"Name","value":"after"},"value":{"kind":"Variable","name":{"kind":"Name","value":"after"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"__typename"}},{"kind":"Field","name":{"kind":"Name","value":"totalCount"}},{"kind":"Field","name":{"kind":"Name","value":"pageInfo"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"__typename"}},{"kind":"Field","name":{"kind":"Name","value":"hasNextPage"}},{"kind":"Field","name":{"kind":"Name","value":"endCursor"}}]}},{"kind":"Field","name":{"kind":"Name","value":"edges"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"__typename"}},{"kind":"Field","name":{"kind":"Name","value":"cursor"}},{"kind":"Field","name":{"kind":"Name","value":"node"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"__typename"}},{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"defaultBranch"}}]}}]}}]}}]}}]} as unknown as DocumentNode<RepositoriesConnectionQuery, RepositoriesConnectionQueryVariables>;
export const CreateDomainVerificationDocument = {"__meta__":{"hash":"sha256:c92d20572b4ef97f5d11c91b7f2c1fd7f3d975994bbda934e128096dcdc7000d"},"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"mutation","name":{"kind":"Name","value":"CreateDomainVerification"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"domain"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"String"}},"defaultValue":{"kind":"StringValue","value":"example.com","block":false}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"__typename"}},{"kind":"Field","name":{"kind":"Name","value":"createDomainVerification"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"input"},"value":{"kind":"ObjectValue","fields":[{"kind":"ObjectField","name":{"kind":"Name","value":"domain"},"value":{"kind":"Variable","name":{"kind":"Name","value":"domain"}}}]}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"__typename"}},{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"domain"}},{"kind":"Field","name":{"kind":"Name","value":"verificationCode"}},{"kind":"Field","name":{"kind":"Name","value":"dnsRecord"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"__typename"}},{"kind":"Field","name":{"kind":"Name","value":"type"}},{"kind":"Field","name":{"kind":"Name","value":"name"}},{"kind":"Field","name":{"kind":"Name","value":"value"}}]}}]}}]}}]} as unknown as DocumentNode<CreateDomainVerificationMutation, CreateDomainVerificationMutationVariables>;
export const DomainDnsCheckDocument = {"__meta__":{"hash":"sha256:ac9bacdce03868aeae63c4c9c082adc31ceae5cb43266ffae42c89e1881bfaa7"},"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"query","name":{"kind":"Name","value":"DomainDnsCheck"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"domain"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"String"}},"defaultValue":{"kind":"StringValue","value":"example.com","block":false}},{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"verificationCode"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"String"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"__typename"}},{"kind":"Field","name":{"kind":"Name","value":"domainDnsCheck"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"domain"},"value":{"kind":"Variable","name":{"kind":"Name","value":"domain"}}},{"kind":"Argument","name":{"kind":"Name","value":"verificationCode"},"value":{"kind":"Variable","name":{"kind":"Name","value":"verificationCode"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"__typename"}},{"kind":"Field","name":{"kind":"Name","value":"host"}},{"kind":"Field","name":{"kind":"Name","value":"values"}},{"kind":"Field","name":{"kind":"Name","value":"matches"}},{"kind":"Field","name":{"kind":"Name","value":"error"}}]}}]}}]} as unknown as DocumentNode<DomainDnsCheckQuery, DomainDnsCheckQueryVariables>;
export const WatchDomainDnsDocument = {"__meta__":{"hash":"sha256:17bfce624972393efd90a8a2929c8f9826c07062450bcb9eb15d2292f9a21cf4"},"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"subscription","name":{"kind":"Name","value":"WatchDomainDns"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"domain"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"String"}},"defaultValue":{"kind":"StringValue","value":"example.com","block":false}},{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"verificationCode"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"String"}},"defaultValue":{"kind":"StringValue","value":"svc-verify-example","block":false}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"domainDnsCheck"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"domain"},"value":{"kind":"Variable","name":{"kind":"Name","value":"domain"}}},{"kind":"Argument","name":{"kind":"Name","value":"verificationCode"},"value":{"kind":"Variable","name":{"kind":"Name","value":"verificationCode"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"__typename"}},{"kind":"Field","name":{"kind":"Name","value":"host"}},{"kind":"Field","name":{"kind":"Name","value":"values"}},{"kind":"Field","name":{"kind":"Name","value":"matches"}},{"kind":"Field","name":{"kind":"Name","value":"error"}}]}}]}}]} as unknown as DocumentNode<WatchDomainDnsSubscription, WatchDomainDnsSubscriptionVariables>;
export const VerifyDomainDocument = {"__meta__":{"hash":"sha256:9936d4a756aaa8e557d08c72c14c2b54f0e435f8e76ddc1a3fa8b5a8683f9cbb"},"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"mutation","name":{"kind":"Name","value":"VerifyDomain"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"domain"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"String"}},"defaultValue":{"kind":"StringValue","value":"example.com","block":false}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"__typename"}},{"kind":"Field","name":{"kind":"Name","value":"verifyDomain"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"input"},"value":{"kind":"ObjectValue","fields":[{"kind":"ObjectField","name":{"kind":"Name","value":"domain"},"value":{"kind":"Variable","name":{"kind":"Name","value":"domain"}}}]}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"__typename"}},{"kind":"Field","name":{"kind":"Name","value":"domain"}},{"kind":"Field","name":{"kind":"Name","value":"verified"}},{"kind":"Field","name":{"kind":"Name","value":"message"}}]}}]}}]} as unknown as DocumentNode<VerifyDomainMutation, VerifyDomainMutationVariables>;
export const RequestDevServerDocument = {"__meta__":{"hash":"sha256:57401a4005947cc7a8d7c3329ffd700a016ee3c71a731f95b96e3f0aa6c99194"},"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"mutation","name":{"kind":"Name","value":"RequestDevServer"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"input"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"RequestDevServerInput"}},"defaultValue":{"kind":"ObjectValue","fields":[{"kind":"ObjectField","name":{"kind":"Name","value":"repoId"},"value":{"kind":"StringValue","value":"repo-1","block":false}},{"kind":"ObjectField","name":{"kind":"Name","value":"installCommand"},"value":{"kind":"StringValue","value":"npm ci","block":false}},{"kind":"ObjectField","name":{"kind":"Name","value":"devCommand"},"value":{"kind":"StringValue","value":"npm run dev","block":false}},{"kind":"ObjectField","name":{"kind":"Name","value":"envVars"},"value":{"kind":"ListValue","values":[{"kind":"ObjectValue","fields":[{"kind":"ObjectField","name":{"kind":"Name","value":"name"},"value":{"kind":"StringValue","value":"NODE_ENV","block":false}},{"kind":"ObjectField","name":{"kind":"Name","value":"value"},"value":{"kind":"StringValue","value":"development","block":false}}]}]}},{"kind":"ObjectField","name":{"kind":"Name","value":"ports"},"value":{"kind":"ListValue","values":[{"kind":"ObjectValue","fields":[{"kind":"ObjectField","name":{"kind":"Name","value":"port"},"value":{"kind":"IntValue","value":"443"}},{"kind":"ObjectField","name":{"kind":"Name","value":"targetPort"},"value":{"kind":"IntValue","value":"3000"}}]}]}},{"kind":"ObjectField","name":{"kind":"Name","value":"computeClass"},"value":{"kind":"StringValue","value":"low","block":false}}]}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"__typename"}},{"kind":"Field","name":{"kind":"Name","value":"requestDevServer"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"input"},"value":{"kind":"Variable","name":{"kind":"Name","value":"input"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"__typename"}},{"kind":"Field","name":{"kind":"Name","value":"ephemeralUrl"}},{"kind":"Field","name":{"kind":"Name","value":"mcpEphemeralUrl"}},{"kind":"Field","name":{"kind":"Name","value":"isNew"}},{"kind":"Field","name":{"kind":"Name","value":"devCommandRunning"}},{"kind":"Field","name":{"kind":"Name","value":"installCommandRunning"}}]}}]}}]} as unknown as DocumentNode<RequestDevServerMutation, RequestDevServerMutationVariables>;