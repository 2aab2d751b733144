import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { schemaPath } from '../../scripts/print-schema.js';
import { changelogPath, recordedBreaks, schemaCheck } from '../../scripts/schema-check.js';

const served = readFileSync(schemaPath, 'utf8');
const changelog = readFileSync(changelogPath, 'utf8');
const dir = mkdtempSync(join(tmpdir(), 'schema-check-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A file that stands for schema.graphql before the change, and another CHANGELOG.md. */
function files(base: string, log = changelog) {
  writeFileSync(join(dir, 'base.graphql'), base);
  writeFileSync(join(dir, 'CHANGELOG.md'), log);
  return ['--base-file', join(dir, 'base.graphql'), '--changelog', join(dir, 'CHANGELOG.md')];
}

const recording = (bullet: string) =>
  changelog.replace('## [Unreleased]\n', `## [Unreleased]\n\n### Removed\n- ${bullet}\n`);

describe('npm run schema:check', () => {
  let output: string[] = [];
  beforeEach(() => {
    output = [];
    const keep = (...args: unknown[]) => output.push(args.join(' '));
    vi.spyOn(console, 'log').mockImplementation(keep);
    vi.spyOn(console, 'error').mockImplementation(keep);
  });
  afterEach(() => vi.restoreAllMocks());

  // The base had a field the served schema lacks: as if the code removed `PageInfo.lastCursor`.
  const baseWithLastCursor = served.replace(
    /(type PageInfo \{\n)/,
    '$1  """The cursor of the last edge."""\n  lastCursor: String\n\n',
  );

  it('fails on a removed field, naming it', async () => {
    expect(baseWithLastCursor).not.toBe(served);
    expect(await schemaCheck(files(baseWithLastCursor))).toBe(1);
    expect(output.join('\n')).toMatch(/BREAKING +PageInfo\.lastCursor: .*removed.*NOT RECORDED/);
  });

  it('passes on an added field', async () => {
    const tag =
      '\n  """One tag by name, or null when there is none."""\n  tag(\n    """The tag name."""\n    name: String!\n  ): Tag\n';
    expect(served).toContain(tag);
    const withoutTag = served.replace(tag, '\n');
    expect(withoutTag).not.toBe(served);
    expect(await schemaCheck(files(withoutTag))).toBe(0);
    expect(output.join('\n')).toMatch(/NON_BREAKING Repository\.tag: Field 'tag' was added/);
  });

  it('passes on a removal that CHANGELOG.md records as breaking', async () => {
    const log = recording('**Breaking:** `PageInfo.lastCursor` is removed; use `endCursor`.');
    expect(await schemaCheck(files(baseWithLastCursor, log))).toBe(0);
    expect(output.join('\n')).toMatch(/BREAKING +PageInfo\.lastCursor: .*\(recorded\)/);
  });

  it('fails on a removal that CHANGELOG.md mentions without saying it breaks', async () => {
    const log = recording('`PageInfo.lastCursor` is gone.');
    expect(await schemaCheck(files(baseWithLastCursor, log))).toBe(1);
  });

  it('fails when the served schema breaks the contract, whatever the base', async () => {
    // The base has what the contract promises; the served schema's stand-in drops a contract field.
    const { checkSchema } = await import('../../scripts/schema-check.js');
    const { buildSchema } = await import('graphql');
    const contract = readFileSync(new URL('../../contract.graphql', import.meta.url), 'utf8');
    const page = 'type RepositoryPage {\n';
    const hasNextPage =
      '  """Whether repositories follow this page (offset + items < total)."""\n  hasNextPage: Boolean!\n\n';
    expect(served).toContain(page + hasNextPage);
    const broken = buildSchema(served.replace(page + hasNextPage, page));
    const check = await checkSchema({
      served: broken,
      base: undefined,
      baseName: 'none',
      contract,
      changelog,
    });
    expect(check.unrecorded.map((change) => `${change.against}: ${change.path}`)).toEqual([
      'the contract: RepositoryPage.hasNextPage',
    ]);
  });

  it('has a ready workflow that runs it, then checks and publishes with rover and Hive', () => {
    const workflow = parseYaml(
      readFileSync(new URL('../../docs/examples/schema-publish.yml', import.meta.url), 'utf8'),
    ) as { jobs: Record<string, { steps: Array<{ run?: string }> }> };
    const runs = (job: string) => (workflow.jobs[job]?.steps ?? []).map((step) => step.run ?? '');
    expect(runs('check')).toContain('npm run schema:check');
    expect(runs('check').join('\n')).toMatch(/rover" subgraph check [\s\S]*hive\/cli schema:check/);
    expect(runs('publish').join('\n')).toMatch(
      /rover" subgraph publish [\s\S]*hive\/cli schema:publish/,
    );
  });

  it('reads the recorded coordinates from the Unreleased section only', () => {
    const log = `# Changelog\n\n## [Unreleased]\n\n### Removed\n- **Breaking:** \`Query.legacy\` and\n  \`Repository.old\` are removed.\n- \`Query.other\` is faster.\n\n## [1.0.0]\n- **Breaking:** \`Query.released\`\n`;
    expect([...recordedBreaks(log)].sort()).toEqual(['Query.legacy', 'Repository.old']);
  });
});
