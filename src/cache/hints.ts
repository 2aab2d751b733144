// The cache policy of one executed operation, the strictest of what its fields declare; nothing
// declared keeps nothing: docs/caching.md#where-a-fields-policy-comes-from.
import {
  type DocumentNode,
  type GraphQLCompositeType,
  type GraphQLField,
  type GraphQLSchema,
  getNamedType,
  isCompositeType,
  Kind,
  type OperationDefinitionNode,
  TypeInfo,
  visit,
  visitWithTypeInfo,
} from 'graphql';
import { type CachePolicy, NO_STORE, readsPolicy, strictestOf } from '../upstream/cache-policy.js';
import type { CompletedCall } from '../upstream/client.js';

interface Annotated {
  astNode?: { directives?: ReadonlyArray<DirectiveLike> | undefined } | null | undefined;
  extensions?: Readonly<Record<string, unknown>> | null | undefined;
}

interface DirectiveLike {
  name: { value: string };
  arguments?: ReadonlyArray<{ name: { value: string }; value: unknown }> | undefined;
}

/** `@cacheControl(maxAge, scope)` on a field or type: from the SDL or from Pothos's extensions. */
export function cacheControlHint(element: Annotated): CachePolicy | undefined {
  let args: { maxAge?: unknown; scope?: unknown } | undefined;
  const ast = element.astNode?.directives?.find((node) => node.name.value === 'cacheControl');
  if (ast) {
    args = {};
    for (const arg of ast.arguments ?? []) {
      const value = arg.value as { kind: string; value?: string };
      const plain =
        value.kind === Kind.INT
          ? Number(value.value)
          : value.kind === Kind.ENUM
            ? value.value
            : undefined;
      (args as Record<string, unknown>)[arg.name.value] = plain;
    }
  } else {
    const declared = element.extensions?.directives;
    if (Array.isArray(declared)) {
      args = (declared as Array<{ name?: unknown; args?: typeof args }>).find(
        (directive) => directive.name === 'cacheControl',
      )?.args;
    } else if (declared && typeof declared === 'object') {
      const entry = (declared as Record<string, unknown>).cacheControl;
      args = (Array.isArray(entry) ? entry[0] : entry) as typeof args;
    }
  }
  if (!args) return undefined;
  const maxAge = typeof args.maxAge === 'number' && args.maxAge > 0 ? Math.floor(args.maxAge) : 0;
  return { maxAge, scope: args.scope === 'PRIVATE' ? 'PRIVATE' : 'PUBLIC' };
}

const hintsByDocument = new WeakMap<DocumentNode, CachePolicy | null>();

/** The strictest hint of the fields a document selects and of the types they return. */
export function staticHint(schema: GraphQLSchema, document: DocumentNode): CachePolicy | undefined {
  const known = hintsByDocument.get(document);
  if (known !== undefined) return known ?? undefined;
  const hints: Array<CachePolicy | undefined> = [];
  const typeInfo = new TypeInfo(schema);
  visit(
    document,
    visitWithTypeInfo(typeInfo, {
      Field() {
        const field = typeInfo.getFieldDef() as GraphQLField<unknown, unknown> | null;
        if (!field) return;
        hints.push(cacheControlHint(field));
        const type = getNamedType(field.type);
        if (isCompositeType(type)) hints.push(cacheControlHint(type as GraphQLCompositeType));
      },
    }),
  );
  const hint = strictestOf(hints);
  hintsByDocument.set(document, hint ?? null);
  return hint;
}

export interface ExecutedOperation {
  operation: OperationDefinitionNode['operation'] | undefined;
  hasErrors: boolean;
  hint: CachePolicy | undefined;
  /** Its upstream calls, every attempt. */
  calls: readonly CompletedCall[];
  /** The lifetimes left of the kept ranges it read instead of calling. */
  cached?: ReadonlyArray<{ policy: CachePolicy }> | undefined;
  /** A field read something with no policy of its own (a DNS look-up). */
  readUnhinted: boolean;
}

/**
 * `no-store` for anything but a query without errors, and for a read with no policy unless a
 * static hint stands for it; else the strictest of the hint and the reads' policies.
 */
export function operationPolicy(executed: ExecutedOperation): CachePolicy {
  if (executed.operation !== 'query' || executed.hasErrors) return NO_STORE;
  if (executed.readUnhinted && !executed.hint) return NO_STORE;
  const reads = readsPolicy(executed.calls);
  if (reads.unpoliced && !executed.hint) return NO_STORE;
  const cached = (executed.cached ?? []).map(({ policy }) => policy);
  return strictestOf([executed.hint, reads.policy, ...cached]) ?? NO_STORE;
}
