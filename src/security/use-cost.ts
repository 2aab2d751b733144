import {
  type DocumentNode,
  type GraphQLError,
  type GraphQLSchema,
  getOperationAST,
  getVariableValues,
  type OperationDefinitionNode,
  type ValueNode,
  visit,
} from 'graphql';
import { type ComplexityEstimator, getComplexity } from 'graphql-query-complexity';
import type { Plugin } from 'graphql-yoga';
import { boundMessage, FacadeError } from '../errors.js';

// graphql-armor's cost model, kept so MAX_COST keeps its meaning: a scalar costs 1, an object 2
// plus 1.5 times its selection, and a list field's whole cost is multiplied by the page it asks
// for. Unlike armor's, the page size is read from the coerced arguments, variables included.
const SCALAR_COST = 1;
const OBJECT_COST = 2;
const DEPTH_FACTOR = 1.5;
const PAGE_ARGUMENTS = new Set(['first', 'limit']);
const INTROSPECTION = new Set(['__schema', '__type']);
// Costs kept per document, one per set of values of the variables the cost depends on.
const COSTS_PER_DOCUMENT = 32;

export interface CostOptions {
  maxCost: number;
  /** A page size argument above it is refused by its resolver; an absent one counts as it. */
  maxPageSize: number;
}

function estimator(maxPageSize: number): ComplexityEstimator {
  return ({ field, node, args, childComplexity }) => {
    if (INTROSPECTION.has(field.name)) return 0;
    if (!node.selectionSet) return SCALAR_COST;
    const sizeArgument = field.args.find((arg) => PAGE_ARGUMENTS.has(arg.name));
    let pages = 1;
    if (sizeArgument) {
      const size = args[sizeArgument.name];
      // Past MAX_PAGE_SIZE the field fails before any call, so it can cost no more than that.
      pages = typeof size === 'number' ? Math.max(1, Math.min(size, maxPageSize)) : maxPageSize;
    }
    return (OBJECT_COST + DEPTH_FACTOR * childComplexity) * pages;
  };
}

/**
 * The cost of an operation, with its variables, checked after validation and before anything
 * executes: a document's cost depends on its variables, so this cannot be a validation rule (Yoga
 * caches validation per document).
 */
export function useCost({ maxCost, maxPageSize }: CostOptions): Plugin {
  const estimators = [estimator(maxPageSize)];
  // Parsed documents are cached by Yoga, so the same object comes back for the same text; the
  // cost is computed again only when a variable it depends on changes.
  const known = new WeakMap<DocumentNode, { variables: string[]; costs: Map<string, number> }>();

  const costOf = (
    schema: GraphQLSchema,
    document: DocumentNode,
    operation: OperationDefinitionNode,
    variables: Record<string, unknown> | undefined,
  ): number => {
    const operationName = operation.name?.value;
    let entry = known.get(document);
    if (!entry) {
      entry = { variables: costVariables(document), costs: new Map() };
      known.set(document, entry);
    }
    const key = `${operationName ?? ''}:${JSON.stringify(entry.variables.map((name) => variables?.[name]))}`;
    const cached = entry.costs.get(key);
    if (cached !== undefined) return cached;
    const cost = getComplexity({
      schema,
      query: document,
      variables: variables ?? {},
      ...(operationName ? { operationName } : {}),
      estimators,
    });
    if (entry.costs.size >= COSTS_PER_DOCUMENT) entry.costs.clear();
    entry.costs.set(key, cost);
    return cost;
  };

  return {
    onExecute({ args, setResultAndStopExecution }) {
      const operation = getOperationAST(args.document, args.operationName);
      // No single operation: execution reports that itself.
      if (!operation) return;
      const variables = (args.variableValues ?? undefined) as Record<string, unknown> | undefined;
      if (operation.variableDefinitions?.length) {
        const coerced = getVariableValues(
          args.schema,
          operation.variableDefinitions,
          variables ?? {},
        );
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
      }
      let cost: number;
      try {
        cost = costOf(args.schema, args.document, operation, variables);
      } catch (error) {
        setResultAndStopExecution({ errors: [refusal((error as GraphQLError).message)] });
        return;
      }
      if (cost > maxCost) {
        setResultAndStopExecution({
          errors: [
            refusal(
              `Query cost limit of ${maxCost} exceeded, found ${Math.ceil(cost)} (MAX_COST; \`limit\` and \`first\` multiply the cost of their selection)`,
            ),
          ],
        });
      }
    },
  };
}

/** The variables the cost can depend on: those in page sizes and in directives (@include, @skip). */
function costVariables(document: DocumentNode): string[] {
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
      if (inDirective > 0 || PAGE_ARGUMENTS.has(node.name.value)) collect(node.value);
    },
  });
  return [...names].sort();
}

function refusal(message: string): FacadeError {
  // The status says the request was refused as a whole, as for the other document limits.
  return new FacadeError('GRAPHQL_VALIDATION_FAILED', message, { http: { status: 400 } });
}
