import { builder } from './builder.js';

builder.queryType({
  description: 'Reads: the repository list and the DNS pre-check of a domain verification.',
});
builder.mutationType({
  description: 'Writes: domain verifications and dev servers. Never retried automatically.',
});
builder.subscriptionType({
  description:
    'Watches: the DNS record of a domain verification, until it matches. Served over server-sent events (graphql-sse) and multipart HTTP (Apollo Client).',
});
