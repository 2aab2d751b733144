import {
  type DocumentNode,
  findBreakingChanges,
  findDangerousChanges,
  type GraphQLSchema,
  Kind,
  parse,
  validate,
} from 'graphql';
import { beforeAll, describe, expect, it } from 'vitest';
import { type SubgraphSource, serviceSdl } from '../../scripts/supergraph.js';
import { schema } from '../../src/schema/index.js';
import {
  COMPOSERS,
  type ComposerName,
  type Composition,
  compose,
  costCoordinates,
  withCostDirectives,
} from '../helpers/composers.js';
import { facadeSelection, relayTypeDefs, spanningQuery } from '../helpers/relay-subgraph.js';

const FACADE_QUERY = `{${facadeSelection}\n}`;

const SETS = ['alone', 'beside the Relay-style neighbour'] as const;
const VARIANTS = ['as served', 'with @cost and @listSize'] as const;

/** The root fields a client of the composed graph must see: every subgraph's, federation's aside. */
function rootFields(documents: readonly DocumentNode[], type: 'Query' | 'Mutation'): string[] {
  return documents
    .flatMap((document) => document.definitions)
    .flatMap((definition) =>
      (definition.kind === Kind.OBJECT_TYPE_DEFINITION ||
        definition.kind === Kind.OBJECT_TYPE_EXTENSION) &&
      definition.name.value === type
        ? (definition.fields ?? []).map((field) => field.name.value)
        : [],
    )
    .filter((name) => !name.startsWith('_'))
    .sort();
}

describe('composition', () => {
  const cases = COMPOSERS.flatMap((composer) =>
    SETS.flatMap((set) => VARIANTS.map((variant) => ({ composer, set, variant }))),
  );
  const composed = new Map<string, { subgraphs: SubgraphSource[]; result: Composition }>();
  const key = (c: { composer: ComposerName; set: string; variant: string }) =>
    `${c.composer} ${c.set} ${c.variant}`;

  beforeAll(async () => {
    // The facade's own answer to `_service { sdl }`, as a registry or gateway fetches it.
    const served = await serviceSdl(schema);
    for (const c of cases) {
      const sdl = c.variant === 'as served' ? served : withCostDirectives(served);
      const subgraphs: SubgraphSource[] = [
        { name: 'facade', url: 'http://facade.test/graphql', sdl },
        ...(c.set === 'alone'
          ? []
          : [{ name: 'relay', url: 'http://relay.test/graphql', sdl: relayTypeDefs }]),
      ];
      composed.set(key(c), { subgraphs, result: compose(c.composer, subgraphs) });
    }
  });

  it.each(cases)('$composer composes the facade $set, $variant', (c) => {
    const { subgraphs, result } = composed.get(key(c)) ?? {};
    // Composition's own errors, one line each, when it refuses.
    expect(result?.errors).toEqual([]);
    if (!result?.apiSchema || !subgraphs) return;
    const documents = subgraphs.map(({ sdl }) => parse(sdl));
    const fields = (type: 'Query' | 'Mutation') => {
      const root =
        type === 'Query' ? result.apiSchema.getQueryType() : result.apiSchema.getMutationType();
      return Object.keys(root?.getFields() ?? {}).sort();
    };
    expect(fields('Query')).toEqual(rootFields(documents, 'Query'));
    expect(fields('Mutation')).toEqual(rootFields(documents, 'Mutation'));
    const query = c.set === 'alone' ? FACADE_QUERY : spanningQuery;
    expect(validate(result.apiSchema, parse(query)).map((error) => error.message)).toEqual([]);
    // Every cost directive of the subgraphs reaches what the composer hands its router.
    const published = documents.flatMap(costCoordinates).sort();
    expect(result.costCoordinates).toEqual(published);
    if (c.variant !== 'as served') {
      expect(published).toEqual(
        expect.arrayContaining([
          'Query.repositories @cost',
          'Query.repositories @listSize',
          'Query.repositoriesConnection @listSize',
        ]),
      );
    }
  });

  it.each(
    COMPOSERS.filter((composer) => composer !== 'apollo').flatMap((composer) =>
      SETS.map((set) => ({ composer, set })),
    ),
  )('$composer serves clients the types, fields and arguments Apollo’s does, $set', (c) => {
    const variant = VARIANTS[1];
    const apollo = composed.get(key({ composer: 'apollo', set: c.set, variant }))?.result;
    const other = composed.get(key({ ...c, variant }))?.result;
    if (!apollo?.apiSchema || !other?.apiSchema) throw new Error('a composition failed');
    // Directive definitions aside: Cosmo's @deprecated lists fewer locations than graphql-js's.
    const changes = (from: GraphQLSchema, to: GraphQLSchema) =>
      [...findBreakingChanges(from, to), ...findDangerousChanges(from, to)]
        .filter((change) => !change.type.startsWith('DIRECTIVE_'))
        .map((change) => `${change.type}: ${change.description}`);
    expect(changes(apollo.apiSchema, other.apiSchema)).toEqual([]);
    expect(changes(other.apiSchema, apollo.apiSchema)).toEqual([]);
  });

  it.each(COMPOSERS)('%s refuses a neighbour whose Tag is not @shareable', (composer) => {
    const { subgraphs } = composed.get(key({ composer, set: SETS[1], variant: VARIANTS[0] })) ?? {
      subgraphs: [],
    };
    const [facade] = subgraphs;
    if (!facade) throw new Error('the facade was not composed');
    const result = compose(composer, [
      facade,
      {
        name: 'relay',
        url: 'http://relay.test/graphql',
        sdl: relayTypeDefs.replace('type Tag @shareable', 'type Tag'),
      },
    ]);
    expect(result.errors.join('\n')).toMatch(/Tag[\s\S]*shareable|shareable[\s\S]*Tag/i);
  });

  it('fails the Guild’s composition when the facade declares v2.14', () => {
    const { subgraphs } = composed.get(
      key({ composer: 'guild', set: SETS[0], variant: VARIANTS[0] }),
    ) ?? { subgraphs: [] };
    const [facade] = subgraphs;
    if (!facade) throw new Error('the facade was not composed');
    const newer = facade.sdl.replace(/federation\/v2\.\d+/, 'federation/v2.14');
    expect(compose('guild', [{ ...facade, sdl: newer }]).errors).toEqual([
      'UNKNOWN_FEDERATION_LINK_VERSION: [facade] Invalid version v2.14 for the federation feature in @link directive on schema',
    ]);
  });
});
