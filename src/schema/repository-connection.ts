import { z } from 'zod';
import type { RepositoryList } from '../upstream/repository-list.js';
import { builder } from './builder.js';
import { pageListSize, UPSTREAM_CALL_WEIGHT } from './cost.js';
import { checkPageSize, nonNegative, RepositoryRef } from './repositories.js';
import { fieldPath } from './selection.js';

// The relay plugin builds the types; the field and its cursors (base64url offsets) are ours: its
// `t.connection` adds `last` and `before`, and its offset resolver clamps `first`, asks for one
// more item and fails bad input without BAD_USER_INPUT.

const RepositoryConnectionRef = builder.connectionObject(
  {
    name: 'RepositoryConnection',
    type: RepositoryRef,
    cost: UPSTREAM_CALL_WEIGHT,
    description: 'The repository list as a Relay connection.',
    edgesField: { description: 'The edges of this page.' },
    fields: (t) => ({
      totalCount: t.int({
        description: 'How many repositories there are in all.',
        // The plugin types the parent as its own shape, which has no totalCount.
        resolve: (connection) => (connection as ReturnType<typeof toConnection>).totalCount,
      }),
    }),
  },
  {
    name: 'RepositoryEdge',
    description: 'A repository and its cursor.',
    nodeField: { description: 'The repository.' },
  },
);

const encodeCursor = (offset: number) =>
  Buffer.from(`repositories:${offset}`).toString('base64url');
const cursorOffset = (cursor: string) => {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const digits = /^repositories:(\d{1,15})$/.exec(text)?.[1];
  return digits !== undefined && encodeCursor(Number(digits)) === cursor ? Number(digits) : null;
};

const DEFAULT_FIRST = 20;

builder.queryFields((t) => ({
  repositoriesConnection: t.field({
    type: RepositoryConnectionRef,
    nullable: true,
    listSize: pageListSize('first', 'edges', DEFAULT_FIRST),
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

function toConnection(page: RepositoryList, offset: number) {
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
