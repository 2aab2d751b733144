import {
  type ASTNode,
  type DocumentNode,
  type GraphQLSchema,
  getOperationAST,
  getVariableValues,
  type OperationDefinitionNode,
  visit,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Context, ServerContext } from '../context.js';
import { boundMessage, FacadeError } from '../errors.js';
import { estimateCost, slicingArgumentNames } from './cost.js';

// Costs kept per operation, one per set of values of the variables the cost depends on.
const COSTS_PER_OPERATION = 32;

export interface CostOptions {
  maxCost: number;
  /** A slicing argument above it is refused by its resolver; it counts as this much. */
  maxPageSize: number;
}

/**
 * MAX_COST, checked after validation and before execution: the cost depends on the variables, and
 * Yoga caches validation per document (docs/operations.md#limits).
 */
export function useCost({ maxCost, maxPageSize }: CostOptions): Plugin<Context, ServerContext> {
  // Yoga caches parsed documents: a cost is computed again only when a variable it reads changes.
  // Kept by the operation's node, so that no key copies its name (which may be most of the text).
  const known = new WeakMap<
    OperationDefinitionNode,
    { variables: string[]; costs: Map<string, number> }
  >();
  const slicing = new WeakMap<GraphQLSchema, Set<string>>();

  const costOf = (
    schema: GraphQLSchema,
    document: DocumentNode,
    operation: OperationDefinitionNode,
    variables: Record<string, unknown>,
  ): number => {
    let entry = known.get(operation);
    if (!entry) {
      let names = slicing.get(schema);
      if (!names) {
        names = slicingArgumentNames(schema);
        slicing.set(schema, names);
      }
      entry = { variables: costVariables(document, names), costs: new Map() };
      known.set(operation, entry);
    }
    const key = JSON.stringify(entry.variables.map((name) => variables[name]));
    const cached = entry.costs.get(key);
    if (cached !== undefined) return cached;
    const cost = estimateCost(schema, document, operation, variables, maxPageSize);
    if (entry.costs.size >= COSTS_PER_OPERATION) entry.costs.clear();
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
        // Reported here, not by graphql-jit: the contract promises graphql-js's paths
        // ("input.ports[0].port"), where graphql-jit names an inner field as a variable ("$port").
        if (coerced.errors) {
          const errors = coerced.errors.map(
            ({ message, nodes }) =>
              new FacadeError('BAD_USER_INPUT', boundMessage(message), {}, { nodes }),
          );
          setResultAndStopExecution({ errors });
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
        const message = `Query cost limit of ${maxCost} exceeded, found ${cost} (MAX_COST; \`limit\` and \`first\` multiply the cost of their selection)`;
        setResultAndStopExecution({ errors: [refusal(message)] });
      }
    },
  };
}

/** The variables the cost can depend on: those in slicing arguments and in @include / @skip. */
function costVariables(document: DocumentNode, slicing: ReadonlySet<string>): string[] {
  const names = new Set<string>();
  const collect = (node: ASTNode) =>
    visit(node, {
      Variable(variable) {
        names.add(variable.name.value);
      },
    });
  visit(document, {
    Directive(node) {
      collect(node);
      return false;
    },
    Argument(node) {
      if (slicing.has(node.name.value)) collect(node.value);
    },
  });
  return [...names].sort();
}

function refusal(message: string): FacadeError {
  return new FacadeError('GRAPHQL_VALIDATION_FAILED', message, { http: { status: 400 } });
}
