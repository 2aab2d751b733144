import SchemaBuilder from '@pothos/core';
import DirectivePlugin from '@pothos/plugin-directives';
import FederationPlugin from '@pothos/plugin-federation';
import ValidationPlugin from '@pothos/plugin-validation';
import type { Context } from '../context.js';
import { BadUserInputError, formatPath } from '../errors.js';

export const builder = new SchemaBuilder<{
  Context: Context;
  DefaultFieldNullability: false;
  DefaultInputFieldRequiredness: false;
}>({
  // Federation only annotates types (the `@key`s); the directives plugin turns annotations into
  // AST nodes, which is how they reach the subgraph SDL that `_service { sdl }` answers.
  plugins: [DirectivePlugin, ValidationPlugin, FederationPlugin],
  defaultFieldNullability: false,
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
