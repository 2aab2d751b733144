// npm run schema:check: classifies every change of the served schema against the committed
// schema.graphql (at a git base: on a branch, where it left main; on main, the last release; or
// --base <ref>) and against the contract (contract.graphql), with graphql-inspector, and fails on a
// breaking change that CHANGELOG.md's Unreleased section does not record. A stale schema.graphql
// is named, not failed: `npm test` fails on it, and a check of changes must run before the file is
// regenerated.
// docs/federation.md#schema-checks has the convention.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type Change, CriticalityLevel, diff } from '@graphql-inspector/core';
import {
  buildASTSchema,
  buildSchema,
  type DefinitionNode,
  type GraphQLSchema,
  isNamedType,
  Kind,
  parse,
  printType,
  visit,
} from 'graphql';
import { printSchemaFile, schemaPath, servedSchema } from './print-schema.js';

const root = fileURLToPath(new URL('..', import.meta.url));
export const contractPath = `${root}contract.graphql`;
export const changelogPath = `${root}CHANGELOG.md`;

export interface Classified {
  /** What the served schema is compared with: `schema.graphql at <ref>` or `the contract`. */
  against: string;
  level: 'BREAKING' | 'DANGEROUS' | 'NON_BREAKING';
  /** The schema coordinate, e.g. `Query.repositories` or `Query.repositories.limit`. */
  path: string;
  message: string;
  /** A breaking change that CHANGELOG.md's Unreleased section records. */
  recorded: boolean;
}

export interface SchemaCheck {
  changes: Classified[];
  /** The breaking changes not recorded: the check fails when there is one. */
  unrecorded: Classified[];
}

/**
 * The coordinates CHANGELOG.md's `## [Unreleased]` section records as breaking: every
 * backquoted coordinate on a bullet that says `Breaking` (its continuation lines included).
 */
export function recordedBreaks(changelog: string): Set<string> {
  const start = changelog.indexOf('## [Unreleased]');
  if (start < 0) return new Set();
  const rest = changelog.slice(start + '## [Unreleased]'.length);
  const end = rest.search(/^## /m);
  const section = end < 0 ? rest : rest.slice(0, end);
  const recorded = new Set<string>();
  for (const bullet of section.split(/^- /m).slice(1)) {
    if (!/\bBreaking\b/.test(bullet)) continue;
    for (const match of bullet.matchAll(
      /`([_A-Za-z][_0-9A-Za-z]*(?:\.[_A-Za-z][_0-9A-Za-z]*)*)`/g,
    )) {
      recorded.add(match[1] as string);
    }
  }
  return recorded;
}

function classify(
  against: string,
  changes: readonly Change[],
  recorded: ReadonlySet<string>,
): Classified[] {
  return changes.map((change) => {
    const path = change.path ?? '';
    const level = change.criticality.level;
    return {
      against,
      level:
        level === CriticalityLevel.Breaking
          ? 'BREAKING'
          : level === CriticalityLevel.Dangerous
            ? 'DANGEROUS'
            : 'NON_BREAKING',
      path,
      message: change.message,
      // A change is recorded by its coordinate or by the type or field it is part of.
      recorded:
        level === CriticalityLevel.Breaking &&
        path.split('.').some((_, i, parts) => recorded.has(parts.slice(0, i + 1).join('.'))),
    };
  });
}

/**
 * The contract as a schema: its SDL, with each type it names but leaves to the project defined
 * as the served schema defines it, so that only what the contract spells out is compared.
 */
export function contractSchema(contractSdl: string, served: GraphQLSchema): GraphQLSchema {
  const document = parse(contractSdl);
  const defined = new Set(
    document.definitions.flatMap((d) => ('name' in d && d.name ? [d.name.value] : [])),
  );
  const named = new Set<string>();
  visit(document, {
    NamedType(node) {
      named.add(node.name.value);
    },
  });
  const builtIn = new Set(['String', 'Int', 'Float', 'Boolean', 'ID']);
  const missing: DefinitionNode[] = [];
  const queue = [...named].filter((name) => !defined.has(name) && !builtIn.has(name));
  while (queue.length > 0) {
    const name = queue.pop() as string;
    if (defined.has(name)) continue;
    defined.add(name);
    const type = served.getType(name);
    if (!type || !isNamedType(type)) continue;
    const definition = parse(printType(type)).definitions[0] as DefinitionNode;
    missing.push(definition);
    visit(definition, {
      NamedType(node) {
        if (!defined.has(node.name.value) && !builtIn.has(node.name.value))
          queue.push(node.name.value);
      },
    });
  }
  return buildASTSchema({
    kind: Kind.DOCUMENT,
    definitions: [...document.definitions, ...missing],
  });
}

/** Every change of `served` against the base schema and the contract, classified. */
export async function checkSchema({
  served,
  base,
  baseName,
  contract,
  changelog,
}: {
  served: GraphQLSchema;
  base: GraphQLSchema | undefined;
  baseName: string;
  contract: string;
  changelog: string;
}): Promise<SchemaCheck> {
  const recorded = recordedBreaks(changelog);
  const changes = [
    ...(base ? classify(baseName, await diff(base, served), recorded) : []),
    ...classify('the contract', await diff(contractSchema(contract, served), served), recorded),
  ];
  return {
    changes,
    unrecorded: changes.filter((change) => change.level === 'BREAKING' && !change.recorded),
  };
}

function git(...args: string[]): string | undefined {
  try {
    return execFileSync('git', args, {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
  } catch {
    return undefined;
  }
}

/**
 * The ref whose schema.graphql is the base: `--base <ref>`; else, on a branch, where it left
 * origin/main (or main); on main itself, the last release: the commit that added CHANGELOG.md's
 * newest version heading, so every breaking change since then must be recorded under Unreleased.
 * HEAD when none of these can be found (no git history).
 */
function baseRef(argv: readonly string[]): string {
  const given = option(argv, '--base');
  if (given) return given;
  const head = git('rev-parse', 'HEAD')?.trim();
  for (const main of ['origin/main', 'main']) {
    const base = git('merge-base', 'HEAD', main)?.trim();
    if (base && base !== head) return base;
    if (base) break;
  }
  const release = /^## \[(\d+\.\d+\.\d+)\]/m.exec(readFileSync(changelogPath, 'utf8'))?.[1];
  const released = release
    ? git('log', '--format=%H', `-S## [${release}]`, '--', 'CHANGELOG.md')
        ?.trim()
        .split('\n')
        .at(-1)
    : undefined;
  return released || 'HEAD';
}

const option = (argv: readonly string[], name: string) =>
  argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined;

/**
 * The check, as `npm run schema:check` runs it; its exit code. `--base <ref>` or `--base-file
 * <path>` names the schema to compare with; `--changelog <path>` another CHANGELOG.md.
 */
export async function schemaCheck(argv: readonly string[]): Promise<number> {
  // Compared as SDL on both sides, so that `@deprecated` reads alike in the file and as served.
  const printed = printSchemaFile(await servedSchema());
  const served = buildSchema(printed);
  let failed = false;
  if (readFileSync(schemaPath, 'utf8') !== printed) {
    console.warn(
      'schema.graphql is not what the facade serves: run `npm run schema` (npm test fails on it).',
    );
  }
  const baseFile = option(argv, '--base-file');
  const ref = baseFile ? undefined : baseRef(argv);
  const baseName = baseFile ?? `schema.graphql at ${ref?.slice(0, 12)}`;
  const baseSdl = baseFile ? readFileSync(baseFile, 'utf8') : git('show', `${ref}:schema.graphql`);
  const base = baseSdl === undefined ? undefined : buildSchema(baseSdl);
  if (!base) console.log(`no ${baseName}: only the contract is compared`);
  const { changes, unrecorded } = await checkSchema({
    served,
    base,
    baseName,
    contract: readFileSync(contractPath, 'utf8'),
    changelog: readFileSync(option(argv, '--changelog') ?? changelogPath, 'utf8'),
  });
  // Against the contract, what the project adds (descriptions, types) is expected: counted only.
  const shown = changes.filter(
    (change) => change.against !== 'the contract' || change.level !== 'NON_BREAKING',
  );
  for (const change of shown) {
    const note =
      change.level === 'BREAKING' ? (change.recorded ? ' (recorded)' : ' (NOT RECORDED)') : '';
    console.log(
      `${change.level.padEnd(12)} ${change.path}: ${change.message} [against ${change.against}]${note}`,
    );
  }
  const count = (level: Classified['level']) => changes.filter((c) => c.level === level).length;
  console.log(
    `${count('BREAKING')} breaking (${unrecorded.length} not recorded), ${count('DANGEROUS')} dangerous, ${count('NON_BREAKING')} safe (${changes.length - shown.length} of them the project's additions to the contract, not listed)`,
  );
  if (unrecorded.length > 0) {
    console.error(
      'A breaking change needs a bullet under ## [Unreleased] in CHANGELOG.md that says "Breaking" and names its coordinate in backquotes, e.g. - **Breaking:** `Query.repositories` is removed.',
    );
    failed = true;
  }
  return failed ? 1 : 0;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.exitCode = await schemaCheck(process.argv.slice(2));
}
