// Writes the variable tables of docs/configuration.md from the declarations in src/config/, each
// between `<!-- variables:<section> -->` and `<!-- /variables -->`; the prose around them stays.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { valueKinds } from '../src/config/values.js';
import { SECTIONS, type Section, type Variable, variablesOf } from '../src/config/variable.js';
import { settingsSchema } from '../src/config/variables.js';

export const docsPath = fileURLToPath(new URL('../docs/configuration.md', import.meta.url));

/** The schema's default as a user would write it ('' for one nobody writes, like an empty list). */
function schemaDefault({ schema }: Variable): string | undefined {
  const parsed = schema.safeParse(undefined);
  const value: unknown = parsed.success ? parsed.data : undefined;
  if (value === undefined) return undefined;
  return ['string', 'number', 'boolean'].includes(typeof value) ? `\`${String(value)}\`` : '';
}

/** What the variable's kind of value accepts (a range, a boolean), if its kind says. */
function kindAccepts({ schema }: Variable): string | undefined {
  const inner =
    schema instanceof z.ZodDefault || schema instanceof z.ZodOptional ? schema.unwrap() : schema;
  return valueKinds.get(inner as z.ZodType)?.accepted;
}

/**
 * A variable's own text may say more than its schema, never something else: it must begin with
 * what the schema says, so a changed default or range cannot leave the docs behind.
 */
function cell(
  { name }: Variable,
  column: string,
  own: string | undefined,
  fromSchema: string | undefined,
): string {
  const text = own ?? fromSchema;
  if (!text) throw new Error(`${name}: the ${column} column needs a text`);
  if (fromSchema !== undefined && !text.startsWith(fromSchema))
    throw new Error(`${name}: its ${column} "${text}" does not begin with ${fromSchema}`);
  if (/[|\n]/.test(text)) throw new Error(`${name}: its ${column} holds a | or a newline`);
  return text;
}

function row(variable: Variable): string {
  const fromSchema = schemaDefault(variable);
  // A default that follows from other variables is not the schema's: the variable's text says it.
  const unset = fromSchema === undefined ? 'unset' : undefined;
  const cells = [
    `\`${variable.name}\``,
    cell(variable, 'meaning', variable.doc, undefined),
    cell(variable, 'default', variable.default ?? unset, fromSchema),
    cell(variable, 'accepted', variable.accepted, kindAccepts(variable)),
  ];
  return `| ${cells.join(' | ')} |`;
}

function table(variables: readonly Variable[]): string {
  return ['| variable | meaning | default | accepted |', '|---|---|---|---|']
    .concat(variables.map(row))
    .join('\n');
}

/** The docs with every table written from the declarations; throws when a section has no place. */
export function writtenDocs(current: string): string {
  const variables = variablesOf(settingsSchema.shape);
  const written = new Set<string>();
  const docs = current.replace(
    /<!-- variables:([a-z-]+) -->\n[\s\S]*?<!-- \/variables -->/g,
    (_marked, section: string) => {
      if (!(SECTIONS as readonly string[]).includes(section) || written.has(section))
        throw new Error(`docs/configuration.md: unknown or repeated section ${section}`);
      written.add(section);
      const rows = variables.filter((variable) => variable.section === (section as Section));
      return `<!-- variables:${section} -->\n${table(rows)}\n<!-- /variables -->`;
    },
  );
  const missing = SECTIONS.filter((section) => !written.has(section));
  if (missing.length > 0)
    throw new Error(`docs/configuration.md: no place for ${missing.join(', ')}`);
  return docs;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(docsPath, writtenDocs(readFileSync(docsPath, 'utf8')));
  console.log(`wrote ${docsPath}`);
}
