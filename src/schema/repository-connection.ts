import { z } from 'zod';
import type { Repository, RepositoryList } from '../upstream/repository-list.js';
import { builder } from './builder.js';
import { checkPageSize, nonNegative, RepositoryRef } from './repositories.js';
import { fieldPath } from './selection.js';

// The repository list as a Relay connection, over the same per-request loader as `repositories`.
// Cursors are opaque base64url offsets; only ones this API issued are accepted.

interface RepositoryEdge {
  cursor: string;
  node: Repository;
}
interface RepositoryConnection {
  edges: RepositoryEdge[];
  pageInfo: {
    hasNextPage: boolean;
    hasPreviousPage: boolean;
    startCursor: string | null;
    endCursor: string | null;
  };
  totalCount: number;
}

const PageInfoRef = builder.objectRef<RepositoryConnection['pageInfo']>('PageInfo').implement({
  // A value type other subgraphs may define too: @shareable, so that they compose.
  shareable: true,
  description: 'Relay page information.',
  fields: (t) => ({
    hasNextPage: t.exposeBoolean('hasNextPage', { description: 'Whether more edges follow.' }),
    hasPreviousPage: t.exposeBoolean('hasPreviousPage', { description: 'Whether edges precede.' }),
    startCursor: t.exposeString('startCursor', {
      nullable: true,
      description: 'The cursor of the first edge.',
    }),
    endCursor: t.exposeString('endCursor', {
      nullable: true,
      description: 'The cursor of the last edge; pass it as `after`.',
    }),
  }),
});

const RepositoryEdgeRef = builder.objectRef<RepositoryEdge>('RepositoryEdge').implement({
  // A value type other subgraphs may define too: @shareable, so that they compose.
  shareable: true,
  description: 'A repository and its cursor.',
  fields: (t) => ({
    cursor: t.exposeString('cursor', { description: 'An opaque cursor for this position.' }),
    // Exposed, not resolved, as in repositories.ts: no resolver call per edge.
    node: t.expose('node', { type: RepositoryRef, description: 'The repository.' }),
  }),
});

const RepositoryConnectionRef = builder
  .objectRef<RepositoryConnection>('RepositoryConnection')
  .implement({
    // A value type other subgraphs may define too: @shareable, so that they compose.
    shareable: true,
    description: 'The repository list as a Relay connection.',
    fields: (t) => ({
      edges: t.expose('edges', {
        type: [RepositoryEdgeRef],
        description: 'The edges of this page.',
      }),
      pageInfo: t.expose('pageInfo', { type: PageInfoRef, description: 'Where this page stands.' }),
      totalCount: t.exposeInt('totalCount', {
        description: 'How many repositories there are in all.',
      }),
    }),
  });

const CURSOR_PREFIX = 'repositories:';
const encodeCursor = (offset: number) =>
  Buffer.from(`${CURSOR_PREFIX}${offset}`).toString('base64url');
const cursorOffset = (cursor: string) => {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const digits = text.startsWith(CURSOR_PREFIX) ? text.slice(CURSOR_PREFIX.length) : '';
  return /^\d{1,15}$/.test(digits) && encodeCursor(Number(digits)) === cursor
    ? Number(digits)
    : null;
};

const DEFAULT_FIRST = 20;

builder.queryFields((t) => ({
  repositoriesConnection: t.field({
    type: RepositoryConnectionRef,
    // Nullable so that one field cut off (by MAX_UPSTREAM_CALLS, say) leaves the others' answers.
    nullable: true,
    description: `The repository list as a Relay connection; \`first\` defaults to ${DEFAULT_FIRST} and may not exceed the configured MAX_PAGE_SIZE. Null, with an error, when this page could not be fetched (the rest of the answer stands).`,
    args: {
      first: t.arg.int({
        description: 'How many edges at most (0 to MAX_PAGE_SIZE).',
        validate: nonNegative,
      }),
      after: t.arg.string({
        description:
          'The cursor after which to start (an `endCursor` or edge `cursor` this API issued).',
        validate: z
          .string()
          .nullish()
          .refine(
            (v) => v == null || cursorOffset(v) !== null,
            'is not a cursor issued by this API',
          ),
      }),
    },
    resolve: async (_root, args, ctx, info) => {
      const max = ctx.config.maxPageSize;
      checkPageSize('first', args.first, max);
      const first = args.first ?? Math.min(DEFAULT_FIRST, max);
      const offset = args.after == null ? 0 : (cursorOffset(args.after) as number) + 1;
      const page = await ctx.loaders.page({ limit: first, offset }, () => fieldPath(info));
      return toConnection(page, offset);
    },
  }),
}));

function toConnection(page: RepositoryList, offset: number): RepositoryConnection {
  const edges = page.repositories.map((node, index) => ({
    cursor: encodeCursor(offset + index),
    node,
  }));
  return {
    edges,
    totalCount: page.total,
    pageInfo: {
      hasNextPage: offset + edges.length < page.total,
      hasPreviousPage: offset > 0,
      startCursor: edges[0]?.cursor ?? null,
      endCursor: edges.at(-1)?.cursor ?? null,
    },
  };
}
