import { readFileSync } from 'node:fs';
import { buildSchema, type GraphQLNamedType, isInputObjectType, isObjectType } from 'graphql';
import { describe, expect, it } from 'vitest';
import { printedSchema, schemaPath } from '../../scripts/print-schema.js';

const sdl = buildSchema(readFileSync(schemaPath, 'utf8'));
// Federation's own (`_service`, `_Service`) are described by the federation spec, not by us.
const userTypes = Object.values(sdl.getTypeMap()).filter(
  (type) =>
    !type.name.startsWith('_') && !['String', 'Int', 'Boolean', 'ID', 'Float'].includes(type.name),
);

describe('schema.graphql', () => {
  it('is the whole schema the facade serves, as its introspection reads (run `npm run schema`)', async () => {
    expect(readFileSync(schemaPath, 'utf8')).toBe(await printedSchema());
  });

  it("holds the directives the facade serves beyond the built-ins, and federation's field", () => {
    expect(sdl.getDirectives().map((directive) => directive.name)).toEqual(
      expect.arrayContaining(['defer', 'stream']),
    );
    expect(sdl.getQueryType()?.getFields()._service?.type.toString()).toBe('_Service!');
  });

  it('describes every type and field', () => {
    const missing: string[] = [];
    const check = (type: GraphQLNamedType) => {
      if (!type.description) missing.push(type.name);
      if (isObjectType(type) || isInputObjectType(type)) {
        for (const field of Object.values(type.getFields())) {
          if (field.name.startsWith('_')) continue;
          if (!field.description) missing.push(`${type.name}.${field.name}`);
        }
      }
    };
    userTypes.forEach(check);
    expect(missing).toEqual([]);
  });

  it('has the root fields and arguments of the contract', () => {
    const args = (type: 'Query' | 'Mutation', field: string) =>
      (type === 'Query' ? sdl.getQueryType() : sdl.getMutationType())
        ?.getFields()
        [field]?.args.map((a) => `${a.name}: ${a.type}`);
    expect(args('Query', 'repositories')).toEqual(['limit: Int', 'offset: Int']);
    expect(args('Query', 'repositoriesConnection')).toEqual(['after: String', 'first: Int']);
    expect(args('Mutation', 'createDomainVerification')).toEqual([
      'input: CreateDomainVerificationInput!',
    ]);
    expect(args('Mutation', 'verifyDomain')).toEqual(['input: VerifyDomainInput!']);
    expect(args('Mutation', 'requestDevServer')).toEqual(['input: RequestDevServerInput!']);
    const devServer = sdl.getType('DevServer');
    expect(isObjectType(devServer) && devServer.getFields().url?.deprecationReason).toBe(
      'Use ephemeralUrl.',
    );
    const input = sdl.getType('RequestDevServerInput');
    const deprecated = isInputObjectType(input)
      ? Object.values(input.getFields())
          .filter((f) => f.deprecationReason)
          .map((f) => f.name)
          .sort()
      : [];
    expect(deprecated).toEqual(['baseId', 'domain', 'repo']);
  });
});
