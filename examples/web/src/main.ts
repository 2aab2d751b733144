import {
  type AnyVariables,
  Client,
  cacheExchange,
  fetchExchange,
  subscriptionExchange,
  type TypedDocumentNode,
} from '@urql/core';
import { persistedExchange } from '@urql/exchange-persisted';
import type { DocumentNode } from 'graphql';
import { createClient as createSseClient } from 'graphql-sse';
import {
  CreateDomainVerificationMutation,
  RepositoriesQuery,
  VerifyDomainMutation,
  WatchDomainDnsSubscription,
} from './operations.js';

/** Set by the Vite server (examples/web/server.ts) to the facade's /graphql URL. */
declare const FACADE_URL: string;

const PAGE_SIZE = 5;

// Subscriptions over server-sent events, one connection each (graphql-sse's default, which the
// facade serves).
const sse = createSseClient({ url: FACADE_URL });

const client = new Client({
  url: FACADE_URL,
  exchanges: [
    cacheExchange,
    // Trusted documents: send the hash codegen put in each document's __meta__, never the text,
    // for mutations and subscriptions too. Queries go as GET within the URL limit, urql's default.
    persistedExchange({
      enforcePersistedQueries: true,
      enableForMutation: true,
      enableForSubscriptions: true,
      generateHash: async (_query, document) =>
        (document as DocumentNode & { __meta__?: { hash?: string } }).__meta__?.hash ?? '',
    }),
    fetchExchange,
    subscriptionExchange({
      // The persisted hash alone, as for queries: graphql-sse's type wants a query, the facade none.
      forwardSubscription: (request) => ({
        subscribe: (sink) => ({
          unsubscribe: sse.subscribe({ ...request, query: request.query as string }, sink),
        }),
      }),
    }),
  ],
});

const element = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

/** Shows each GraphQL error by its contract code (extensions.code), or the network failure. */
function showErrors(
  error:
    | {
        graphQLErrors: readonly { message: string; extensions: Record<string, unknown> }[];
        networkError?: Error | undefined;
      }
    | undefined,
): void {
  const list = element<HTMLUListElement>('errors');
  list.replaceChildren();
  if (!error) return;
  const lines = error.graphQLErrors.map(
    (e) => `${String(e.extensions.code ?? 'NO_CODE')}: ${e.message}`,
  );
  if (error.networkError) lines.push(`NETWORK: ${error.networkError.message}`);
  for (const line of lines) {
    const item = document.createElement('li');
    item.textContent = line;
    item.dataset.code = line.slice(0, line.indexOf(':'));
    list.append(item);
  }
}

let offset = 0;

async function showRepositories(): Promise<void> {
  const result = await client.query(RepositoriesQuery, { limit: PAGE_SIZE, offset }).toPromise();
  showErrors(result.error);
  const page = result.data?.repositories;
  if (!page) return;
  const rows = page.items.map((repository) => {
    const row = document.createElement('tr');
    for (const text of [
      repository.id ?? '',
      repository.defaultBranch ?? '',
      repository.branches.map((branch) => branch.name).join(', '),
      repository.tags.map((tag) => tag.name).join(', '),
    ]) {
      const cell = document.createElement('td');
      cell.textContent = text;
      row.append(cell);
    }
    return row;
  });
  element('repositories').replaceChildren(...rows);
  const last = page.offset + page.items.length;
  element('page-info').textContent =
    page.items.length > 0
      ? `Repositories ${page.offset + 1}–${last} of ${page.total}`
      : `No repositories (${page.total} in all)`;
  element<HTMLButtonElement>('previous').disabled = page.offset === 0;
  element<HTMLButtonElement>('next').disabled = !page.hasNextPage;
}

element('previous').addEventListener('click', () => {
  offset = Math.max(0, offset - PAGE_SIZE);
  void showRepositories();
});
element('next').addEventListener('click', () => {
  offset += PAGE_SIZE;
  void showRepositories();
});

let verification: { domain: string; code: string } | undefined;
const domainInput = element<HTMLInputElement>('domain');
const output = element('verification');

async function run<Data, Variables extends AnyVariables>(
  operation: 'query' | 'mutation',
  document: TypedDocumentNode<Data, Variables>,
  variables: Variables,
): Promise<Data | undefined> {
  const result = await client[operation](document, variables).toPromise();
  showErrors(result.error);
  return result.data ?? undefined;
}

element('domain-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const data = await run('mutation', CreateDomainVerificationMutation, {
    domain: domainInput.value,
  });
  const created = data?.createDomainVerification;
  verification = created ? { domain: created.domain, code: created.verificationCode } : undefined;
  element<HTMLButtonElement>('check').disabled = !verification;
  element<HTMLButtonElement>('verify').disabled = !verification;
  output.textContent = created
    ? `Publish ${created.dnsRecord.type} ${created.dnsRecord.name} "${created.dnsRecord.value}"`
    : '';
});

// One watch at a time: a new click ends the one before. The facade looks the record up and says
// when it changes, so the page has no polling loop of its own.
let watching: { unsubscribe(): void } | undefined;

element('check').addEventListener('click', () => {
  if (!verification) return;
  watching?.unsubscribe();
  const variables = { domain: verification.domain, verificationCode: verification.code };
  watching = client.subscription(WatchDomainDnsSubscription, variables).subscribe((result) => {
    showErrors(result.error);
    const check = result.data?.domainDnsCheck;
    if (!check) return;
    output.textContent = `DNS at ${check.host}: ${
      check.matches ? 'the code is published' : (check.error ?? 'the code is not published yet')
    }`;
  });
});

element('verify').addEventListener('click', async () => {
  if (!verification) return;
  const data = await run('mutation', VerifyDomainMutation, { domain: verification.domain });
  const result = data?.verifyDomain;
  if (result) {
    output.textContent = result.verified
      ? `${result.domain} is verified`
      : `${result.domain} is not verified: ${result.message ?? 'no reason given'}`;
  }
});

void showRepositories();
