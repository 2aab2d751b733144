import {
  type DocumentNode,
  type GraphQLSchema,
  getOperationAST,
  getVariableValues,
  type OperationDefinitionNode,
  type ValueNode,
  visit,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Context, ServerContext } from '../context.js';
import { boundMessage, FacadeError } from '../errors.js';
import { estimateCost, slicingArgumentNames } from './cost.js';

// Costs kept per document, one per set of values of the variables the cost depends on.
const COSTS_PER_DOCUMENT = 32;

export interface CostOptions {
  maxCost: number;
  /** A slicing argument above it is refused by its resolver; it counts as this much. */
  maxPageSize: number;
}

/**
 * The cost of an operation, with its variables, checked after validation and before anything
 * executes: a document's cost depends on its variables, so this cannot be a validation rule (Yoga
 * caches validation per document). The model is the IBM cost spec's over the schema's own `@cost`
 * and `@listSize` (src/security/cost.ts), the numbers a router reads from `_service { sdl }`.
 */
export function useCost({ maxCost, maxPageSize }: CostOptions): Plugin<Context, ServerContext> {
  // Parsed documents are cached by Yoga, so the same object comes back for the same text; the
  // cost is computed again only when a variable it depends on changes.
  const known = new WeakMap<DocumentNode, { variables: string[]; costs: Map<string, number> }>();
  const slicing = new WeakMap<GraphQLSchema, Set<string>>();

  const costOf = (
    schema: GraphQLSchema,
    document: DocumentNode,
    operation: OperationDefinitionNode,
    variables: Record<string, unknown>,
  ): number => {
    let entry = known.get(document);
    if (!entry) {
      let names = slicing.get(schema);
      if (!names) {
        names = slicingArgumentNames(schema);
        slicing.set(schema, names);
      }
      entry = { variables: costVariables(document, names), costs: new Map() };
      known.set(document, entry);
    }
    const key = `${operation.name?.value ?? ''}:${JSON.stringify(entry.variables.map((name) => variables[name]))}`;
    const cached = entry.costs.get(key);
    if (cached !== undefined) return cached;
    const cost = estimateCost(schema, document, operation, variables, maxPageSize);
    if (entry.costs.size >= COSTS_PER_DOCUMENT) entry.costs.clear();
    entry.costs.set(key, cost);
    return cost;
  };

  return {
    onExecute({ args, setResultAndStopExecution }) {
      const operation = getOperationAST(args.document, args.operationName);
      // No single operation: execution reports that itself.
      if (!operation) return;
      let variables = (args.variableValues ?? {}) as Record<string, unknown>;
      if (operation.variableDefinitions?.length) {
        const coerced = getVariableValues(args.schema, operation.variableDefinitions, variables);
        // Reported from here rather than by graphql-jit, whose messages name an inner field as if
        // it were a variable ("$port"); graphql-js names the path as the client wrote it
        // ("input.ports[0].port"), which the contract promises.
        if (coerced.errors) {
          setResultAndStopExecution({
            errors: coerced.errors.map(
              (error) =>
                new FacadeError(
                  'BAD_USER_INPUT',
                  boundMessage(error.message),
                  {},
                  {
                    nodes: error.nodes,
                  },
                ),
            ),
          });
          return;
        }
        variables = coerced.coerced;
      }
      let cost: number;
      try {
        cost = costOf(args.schema, args.document, operation, variables);
      } catch (error) {
        setResultAndStopExecution({ errors: [refusal((error as Error).message)] });
        return;
      }
      args.contextValue.cost = { estimated: cost, max: maxCost };
      if (cost > maxCost) {
        setResultAndStopExecution({
          errors: [
            refusal(
              `Query cost limit of ${maxCost} exceeded, found ${cost} (MAX_COST; \`limit\` and \`first\` multiply the cost of their selection)`,
            ),
          ],
        });
      }
    },
  };
}

/** The variables the cost can depend on: those in slicing arguments and in @include / @skip. */
function costVariables(document: DocumentNode, slicing: ReadonlySet<string>): string[] {
  const names = new Set<string>();
  const collect = (value: ValueNode) =>
    visit(value, {
      Variable(node) {
        names.add(node.name.value);
      },
    });
  let inDirective = 0;
  visit(document, {
    Directive: {
      enter() {
        inDirective++;
      },
      leave() {
        inDirective--;
      },
    },
    Argument(node) {
      if (inDirective > 0 || slicing.has(node.name.value)) collect(node.value);
    },
  });
  return [...names].sort();
}

function refusal(message: string): FacadeError {
  // The status says the request was refused as a whole, as for the other document limits.
  return new FacadeError('GRAPHQL_VALIDATION_FAILED', message, { http: { status: 400 } });
}
