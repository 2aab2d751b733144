// One environment variable, declared once: its name, its schema (validation and default) and its
// row in docs/configuration.md. The schema instance is the key its declaration is found by.
import { z } from 'zod';

/** The tables of docs/configuration.md, in its order. */
export const SECTIONS = [
  'server',
  'upstream',
  'dns',
  'limits',
  'rate-limits',
  'browsers',
  'persisted-documents',
  'caching',
  'operations',
  'tracing',
] as const;

export type Section = (typeof SECTIONS)[number];

/** A variable's row in the docs: one line of Markdown per column. */
export interface VariableDoc {
  section: Section;
  doc: string;
  /** Without it: the schema's default, or `unset`. */
  default?: string;
  /** Without it: what its kind of value says (a range, a boolean). */
  accepted?: string;
  /** Never echoed, not even in a start-up error: keys, tokens, URLs that can hold a password. */
  secret?: boolean;
}

export interface Variable extends VariableDoc {
  name: string;
  /** Where its value sits in the parsed settings. */
  path: readonly string[];
  schema: z.ZodType;
}

const declarations = z.registry<VariableDoc & { name: string }>();

/** Declares the variables of one section of the docs; each schema comes back as it was given. */
export function section(section: Section) {
  return <T extends z.ZodType>(name: string, schema: T, doc: Omit<VariableDoc, 'section'>): T => {
    // `.default()` and `.optional()` make a new instance each time, so a clash is a copied leaf.
    const taken = declarations.get(schema)?.name;
    if (taken) throw new Error(`${name}: its schema instance is already ${taken}'s`);
    declarations.add(schema, { name, section, ...doc });
    return schema;
  };
}

/** Every variable of a settings shape, depth first in declaration order (the docs' row order). */
export function variablesOf(shape: Record<string, z.ZodType>, path: string[] = []): Variable[] {
  return Object.entries(shape).flatMap(([key, schema]) => {
    const at = [...path, key];
    if (schema instanceof z.ZodObject) return variablesOf(schema.shape, at);
    const declared = declarations.get(schema);
    if (!declared) throw new Error(`${at.join('.')}: not declared in a section`);
    return [{ ...declared, path: at, schema }];
  });
}
