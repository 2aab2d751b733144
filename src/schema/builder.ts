import SchemaBuilder from '@pothos/core';
import DirectivePlugin from '@pothos/plugin-directives';
import FederationPlugin from '@pothos/plugin-federation';
import RelayPlugin from '@pothos/plugin-relay';
import ValidationPlugin from '@pothos/plugin-validation';
import type { Context } from '../context.js';
import { BadUserInputError, formatPath } from '../errors.js';

export const builder = new SchemaBuilder<{
  Context: Context;
  DefaultFieldNullability: false;
  DefaultInputFieldRequiredness: false;
  DefaultEdgesNullability: false;
  DefaultNodeNullability: false;
}>({
  // The directives plugin puts federation's `@key`s in the AST, where `_service { sdl }` reads them.
  plugins: [DirectivePlugin, ValidationPlugin, FederationPlugin, RelayPlugin],
  defaultFieldNullability: false,
  // Connection types only (no Node interface); PageInfo is one type per schema, so it is set here.
  relay: {
    pageInfoTypeOptions: { shareable: true, description: 'Relay page information.' },
    hasNextPageFieldOptions: { description: 'Whether more edges follow.' },
    hasPreviousPageFieldOptions: { description: 'Whether edges precede.' },
    startCursorFieldOptions: { description: 'The cursor of the first edge.' },
    endCursorFieldOptions: { description: 'The cursor of the last edge; pass it as `after`.' },
    pageInfoFieldOptions: { description: 'Where this page stands.' },
    cursorFieldOptions: { description: 'An opaque cursor for this position.' },
    defaultConnectionTypeOptions: { shareable: true },
    defaultEdgeTypeOptions: { shareable: true },
  },
  validation: {
    // Every rule failure becomes one BAD_USER_INPUT naming each path the way a client writes it.
    validationError: (failure) => {
      throw new BadUserInputError(
        failure.issues.map((issue) => ({
          path: formatPath(
            (issue.path ?? []).map((key) => (typeof key === 'object' ? key.key : key)),
          ),
          message: issue.message,
        })),
      );
    },
  },
});
