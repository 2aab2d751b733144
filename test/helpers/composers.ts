// The three federation composers a platform team may compose the facade with, behind one shape:
// @apollo/composition (Apollo's rover and GraphOS), @theguild/federation-composition (Hive's
// registry, Hive Gateway, GraphQL Mesh) and @wundergraph/composition (Cosmo). Each answers either
// its errors, one readable line each, or the schema a client sees; the first two also answer a
// supergraph SDL that @apollo/gateway and Hive Gateway serve. Cosmo's answer is the router
// configuration of its own router, which no gateway in the npm registry reads.
import { composeServices as composeWithApollo } from '@apollo/composition';
import { composeServices as composeWithGuild } from '@theguild/federation-composition';
import { type Costs, federateSubgraphs } from '@wundergraph/composition';
import {
  buildASTSchema,
  type ConstDirectiveNode,
  type DirectiveNode,
  type DocumentNode,
  type FieldDefinitionNode,
  type GraphQLSchema,
  Kind,
  parse,
  print,
  visit,
} from 'graphql';
import type { SubgraphSource } from '../../scripts/supergraph.js';

export const COMPOSERS = ['apollo', 'guild', 'cosmo'] as const;
export type ComposerName = (typeof COMPOSERS)[number];

export type Composition =
  | { composer: ComposerName; errors: string[]; supergraphSdl?: undefined; apiSchema?: undefined }
  | {
      composer: ComposerName;
      errors: [];
      /** The supergraph a gateway serves; undefined for Cosmo, whose router reads its own format. */
      supergraphSdl: string | undefined;
      /** The schema the composed graph serves to its clients. */
      apiSchema: GraphQLSchema;
      /** Where the composed graph carries `@cost` / `@listSize` for a router (costCoordinates). */
      costCoordinates: string[];
    };

const COST_DIRECTIVE_NAMES = new Set(['cost', 'listSize']);

/**
 * Each `@cost` and `@listSize` of an SDL as `Type @cost`, `Type.field @listSize` or
 * `Type.field(arg:) @cost`, sorted.
 */
export function costCoordinates(document: DocumentNode): string[] {
  const found: string[] = [];
  const collect = (coordinate: string, directives: readonly DirectiveNode[] = []) => {
    for (const d of directives) {
      if (COST_DIRECTIVE_NAMES.has(d.name.value)) found.push(`${coordinate} @${d.name.value}`);
    }
  };
  for (const definition of document.definitions) {
    if (!('name' in definition) || !definition.name || !('directives' in definition)) continue;
    const type = definition.name.value;
    collect(type, definition.directives);
    if (!('fields' in definition)) continue;
    for (const field of definition.fields ?? []) {
      collect(`${type}.${field.name.value}`, field.directives);
      if (!('arguments' in field)) continue;
      for (const argument of field.arguments ?? []) {
        collect(`${type}.${field.name.value}(${argument.name.value}:)`, argument.directives);
      }
    }
  }
  return found.sort();
}

/** costCoordinates of what Cosmo hands its router: the cost configuration of each subgraph. */
function cosmoCostCoordinates(configs: Iterable<{ costs?: Costs }>): string[] {
  const found = new Set<string>();
  for (const { costs } of configs) {
    if (!costs) continue;
    for (const type of costs.typeWeights.keys()) found.add(`${type} @cost`);
    for (const [coordinate, weight] of costs.fieldWeights) {
      if (weight.weight !== undefined) found.add(`${coordinate} @cost`);
      for (const argument of weight.argumentWeights.keys()) {
        found.add(`${coordinate}(${argument}:) @cost`);
      }
    }
    for (const coordinate of costs.listSizes.keys()) found.add(`${coordinate} @listSize`);
  }
  return [...found].sort();
}

function line(error: Error & { extensions?: Record<string, unknown> }): string {
  const code = error.extensions?.code;
  return `${typeof code === 'string' ? code : 'ERROR'}: ${error.message}`;
}

/** The subgraphs as Apollo's and the Guild's composers take them. */
const services = (subgraphs: readonly SubgraphSource[]) =>
  subgraphs.map(({ name, url, sdl }) => ({ name, url, typeDefs: parse(sdl) }));

/** Composes the subgraphs with one composer; never throws on a composition error. */
export function compose(composer: ComposerName, subgraphs: readonly SubgraphSource[]): Composition {
  switch (composer) {
    case 'apollo': {
      const result = composeWithApollo(services(subgraphs));
      if (result.errors) return { composer, errors: result.errors.map(line) };
      return {
        composer,
        errors: [],
        supergraphSdl: result.supergraphSdl,
        apiSchema: result.schema.toAPISchema().toGraphQLJSSchema(),
        costCoordinates: costCoordinates(parse(result.supergraphSdl)),
      };
    }
    case 'guild': {
      const result = composeWithGuild(services(subgraphs));
      if (result.errors) return { composer, errors: result.errors.map(line) };
      return {
        composer,
        errors: [],
        supergraphSdl: result.supergraphSdl,
        apiSchema: buildASTSchema(result.publicDocumentNode),
        costCoordinates: costCoordinates(result.supergraphDocumentNode),
      };
    }
    case 'cosmo': {
      const result = federateSubgraphs({
        subgraphs: subgraphs.map(({ name, url, sdl }) => ({ name, url, definitions: parse(sdl) })),
      });
      if (!result.success) return { composer, errors: result.errors.map(line) };
      return {
        composer,
        errors: [],
        supergraphSdl: undefined,
        apiSchema: result.federatedGraphClientSchema,
        costCoordinates: cosmoCostCoordinates(result.subgraphConfigBySubgraphName.values()),
      };
    }
  }
}

function directive(source: string): ConstDirectiveNode {
  const field = parse(`type T { f: Int ${source} }`).definitions[0];
  if (field?.kind !== Kind.OBJECT_TYPE_DEFINITION) throw new Error('unreachable');
  const node = field.fields?.[0]?.directives?.[0];
  if (!node) throw new Error(`not a directive: ${source}`);
  return node;
}

/** The IBM cost directives a list field gets: its `@listSize` and a `@cost`. */
const COST_DIRECTIVES: Record<string, readonly string[]> = {
  repositories: [
    '@cost(weight: 1)',
    '@listSize(slicingArguments: ["limit"], sizedFields: ["items"])',
  ],
  repositoriesConnection: [
    '@cost(weight: 1)',
    '@listSize(slicingArguments: ["first"], sizedFields: ["edges"])',
  ],
};

/**
 * The subgraph SDL with `@cost` and `@listSize` imported from the federation spec and set on the
 * root list fields, as the facade publishes them for routers' demand control. Leaves an import or
 * a directive that is already there as it is, so it holds for an SDL that has them already.
 */
export function withCostDirectives(sdl: string): string {
  const document: DocumentNode = visit(parse(sdl), {
    Directive(node) {
      if (node.name.value !== 'link') return undefined;
      return {
        ...node,
        arguments: node.arguments?.map((argument) => {
          if (argument.name.value !== 'import' || argument.value.kind !== Kind.LIST)
            return argument;
          const imported = argument.value.values.flatMap((value) =>
            value.kind === Kind.STRING ? [value.value] : [],
          );
          const missing = ['@cost', '@listSize'].filter((name) => !imported.includes(name));
          return {
            ...argument,
            value: {
              ...argument.value,
              values: [
                ...argument.value.values,
                ...missing.map((value) => ({ kind: Kind.STRING, value }) as const),
              ],
            },
          };
        }),
      };
    },
    ObjectTypeDefinition(node) {
      if (node.name.value !== 'Query') return undefined;
      return {
        ...node,
        fields: node.fields?.map((field): FieldDefinitionNode => {
          const wanted = COST_DIRECTIVES[field.name.value] ?? [];
          const present = new Set(field.directives?.map((d) => d.name.value));
          const added = wanted.map(directive).filter((d) => !present.has(d.name.value));
          return { ...field, directives: [...(field.directives ?? []), ...added] };
        }),
      };
    },
  });
  return print(document);
}
