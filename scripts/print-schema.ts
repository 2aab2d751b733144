// Writes the contract's exact form: the Pothos schema, sorted so that diffs stay readable.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { lexicographicSortSchema, printSchema } from 'graphql';
import { schema } from '../src/schema/index.js';

export const schemaPath = fileURLToPath(new URL('../schema.graphql', import.meta.url));
export const printedSchema = () => `${printSchema(lexicographicSortSchema(schema))}\n`;

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(schemaPath, printedSchema());
  console.log(`wrote ${schemaPath}`);
}
