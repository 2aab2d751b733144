import SchemaBuilder from '@pothos/core';
import ValidationPlugin from '@pothos/plugin-validation';
import type { Context } from '../context.js';
import { BadUserInputError, formatPath } from '../errors.js';

export const builder = new SchemaBuilder<{
  Context: Context;
  DefaultFieldNullability: false;
  DefaultInputFieldRequiredness: false;
}>({
  plugins: [ValidationPlugin],
  defaultFieldNullability: false,
  validation: {
    // Every rule failure becomes one BAD_USER_INPUT naming each path the way a client writes it.
    validationError: (failure) => {
      throw new BadUserInputError(
        failure.issues.map((issue) => ({
          path: formatPath((issue.path ?? []).map((key) => (typeof key === 'object' ? key.key : key))),
          message: issue.message,
        })),
      );
    },
  },
});
