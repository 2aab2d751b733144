import { z } from 'zod';
import { BadUserInputError } from '../errors.js';
import type { Branch, Repository, Tag } from '../upstream/repository-list.js';
import { builder } from './builder.js';
import { ASSUMED_PAGE_SIZE, pageListSize, refsListSize, UPSTREAM_CALL_WEIGHT } from './cost.js';
import { fieldPath, selectedFields } from './selection.js';

interface RepositoryPage {
  items: Repository[];
  total: number;
  offset: number;
  hasNextPage: boolean;
}

const BranchRef = builder.objectRef<Branch>('Branch').implement({
  shareable: true,
  description: 'A branch of a repository.',
  fields: (t) => ({
    name: t.exposeString('name', {
      description: 'The branch name (the map key when the upstream omits it).',
    }),
    target: t.exposeString('target', { description: 'The commit the branch points at.' }),
    isDefault: t.exposeBoolean('isDefault', {
      description: "Whether this is the repository's default branch (the upstream's `default`).",
    }),
  }),
});

const TagRef = builder.objectRef<Tag>('Tag').implement({
  shareable: true,
  description: 'A tag of a repository.',
  fields: (t) => ({
    name: t.exposeString('name', {
      description: 'The tag name (the map key when the upstream omits it).',
    }),
    target: t.exposeString('target', { description: 'The commit or object the tag points at.' }),
    message: t.exposeString('message', {
      nullable: true,
      description: 'The annotation message, if any.',
    }),
  }),
});

export const RepositoryRef = builder.objectRef<Repository>('Repository').implement({
  description: 'A git repository with its branches and tags.',
  fields: (t) => ({
    id: t.exposeID('id', {
      nullable: true,
      description: 'The upstream identifier, when the upstream sends one.',
    }),
    defaultBranch: t.exposeString('defaultBranch', {
      nullable: true,
      description: 'The name of the default branch.',
    }),
    // Exposed, not resolved: graphql-jit reads a field without a resolver as a property, and
    // calls a resolver with a resolve info built for every item (docs/performance.md).
    branches: t.expose('branches', {
      type: [BranchRef],
      description: "The branches, in the upstream's order.",
      listSize: refsListSize,
    }),
    branch: t.field({
      type: BranchRef,
      nullable: true,
      description: 'One branch by name, or null when there is none.',
      args: { name: t.arg.string({ required: true, description: 'The branch name.' }) },
      resolve: (repo, { name }) => repo.branches.find((branch) => branch.name === name) ?? null,
    }),
    tags: t.expose('tags', {
      type: [TagRef],
      description: "The tags, in the upstream's order.",
      listSize: refsListSize,
    }),
    tag: t.field({
      type: TagRef,
      nullable: true,
      description: 'One tag by name, or null when there is none.',
      args: { name: t.arg.string({ required: true, description: 'The tag name.' }) },
      resolve: (repo, { name }) => repo.tags.find((tag) => tag.name === name) ?? null,
    }),
  }),
});

// A key the router never resolves here: the upstream has no read by id (docs/federation.md).
builder.asEntity(RepositoryRef, {
  key: builder.keyDirective(builder.selection<{ id: string }>('id'), false),
  resolveReference: () => {
    throw new Error('Repository cannot be fetched by key: the upstream has no such read');
  },
});

const RepositoryPageRef = builder.objectRef<RepositoryPage>('RepositoryPage').implement({
  shareable: true,
  cost: UPSTREAM_CALL_WEIGHT,
  description: 'One page of repositories, paged by limit and offset.',
  fields: (t) => ({
    // Exposed, not resolved, as Repository's branches and tags are.
    items: t.expose('items', {
      type: [RepositoryRef],
      description: 'The repositories of this page.',
    }),
    total: t.exposeInt('total', { description: 'How many repositories there are in all.' }),
    offset: t.exposeInt('offset', { description: 'The offset of the first item of this page.' }),
    hasNextPage: t.exposeBoolean('hasNextPage', {
      description: 'Whether repositories follow this page (offset + items < total).',
    }),
  }),
});

export const nonNegative = z.number().int().min(0, 'must be >= 0').nullish();

/**
 * The one rule for page sizes (`limit`, `first`): at most MAX_PAGE_SIZE, checked before any
 * upstream call. The bound is configuration, so it cannot live in the static zod rule above.
 */
export function checkPageSize(argument: string, value: number | null | undefined, max: number) {
  if (value != null && value > max) {
    throw new BadUserInputError([{ path: argument, message: `must be <= ${max} (MAX_PAGE_SIZE)` }]);
  }
}

builder.queryFields((t) => ({
  repositories: t.field({
    type: RepositoryPageRef,
    nullable: true,
    listSize: pageListSize('limit', 'items', ASSUMED_PAGE_SIZE),
    description:
      'One page of repositories. Omitted limit and offset are not sent: the upstream defaults apply. Null, with an error, when this page could not be fetched (the rest of the answer stands).',
    args: {
      limit: t.arg.int({
        description: 'How many repositories at most (0 to MAX_PAGE_SIZE).',
        validate: nonNegative,
      }),
      offset: t.arg.int({ description: 'How many to skip (>= 0).', validate: nonNegative }),
    },
    resolve: async (_root, args, ctx, info) => {
      checkPageSize('limit', args.limit, ctx.config.maxPageSize);
      const limit = args.limit ?? undefined;
      const offset = args.offset ?? undefined;
      const fields = selectedFields(info);
      // Only `total` (and what follows from it) wanted: ask the upstream for no items at all.
      const countOnly = !fields.has('items') && (limit !== undefined || !fields.has('hasNextPage'));
      const page = await ctx.loaders.page({ limit: countOnly ? 0 : limit, offset }, () =>
        fieldPath(info),
      );
      const items = page.repositories;
      const shown =
        countOnly && limit !== undefined
          ? Math.min(limit, Math.max(0, page.total - page.offset))
          : items.length;
      return {
        items,
        total: page.total,
        offset: page.offset,
        hasNextPage: page.offset + shown < page.total,
      };
    },
  }),
}));
