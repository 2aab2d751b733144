import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { type RuleGroup, ruleGroups, runbookUrl } from '../../scripts/observability/alerts.js';
import {
  AVAILABILITY,
  CODE_CLASSES,
  errorBudget,
  LATENCY,
  percent,
  RUNBOOK,
} from '../../scripts/observability/objectives.js';
import { generatedFiles, generatedPath } from '../../scripts/observability.js';
import { dashboardExpressions } from '../helpers/promql.js';

/**
 * Whether Debian's `promtool` (package `prometheus`) is on PATH. Without it the promtool checks
 * are skipped, and the run says so once; CI fails them instead.
 */
const hasPromtool = spawnSync('promtool', ['--version']).status === 0;
if (!hasPromtool && process.env.CI !== 'true') {
  process.emitWarning(
    'promtool is not installed: the alert rules are not checked (apt-get install prometheus)',
  );
}

const RULES = generatedPath('deploy/prometheus/rules.yaml');
const RULE_TESTS = generatedPath('deploy/prometheus/rules.test.yaml');
const operations = readFileSync(generatedPath('docs/operations.md'), 'utf8');
const alerts = ruleGroups().flatMap((group) => group.rules);

function promtool(...args: string[]) {
  const run = spawnSync('promtool', args, { encoding: 'utf8' });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

/** GitHub's anchor of a Markdown heading. */
const anchor = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^a-z0-9 _-]/g, '')
    .replaceAll(' ', '-');

/** A `## ` section of docs/operations.md, its heading line excluded. */
function section(title: string): string {
  const start = operations.indexOf(`\n## ${title}\n`);
  if (start < 0) throw new Error(`docs/operations.md has no section "${title}"`);
  const body = operations.slice(start + title.length + 5);
  return body.slice(0, body.search(/^## /m));
}

describe('the dashboard and the alert rules', () => {
  it('are what scripts/observability generates (run `npm run observability`)', () => {
    for (const [path, text] of Object.entries(generatedFiles())) {
      expect(readFileSync(generatedPath(path), 'utf8'), path).toBe(text);
    }
  });

  it("hold the same groups in the rule file and the operator's PrometheusRule", () => {
    const file = parse(readFileSync(RULES, 'utf8')) as { groups: RuleGroup[] };
    const resource = parse(
      readFileSync(
        generatedPath('deploy/kubernetes/components/monitoring/prometheus-rule.yaml'),
        'utf8',
      ),
    ) as { spec: { groups: RuleGroup[] } };
    expect(resource.spec.groups).toEqual(file.groups);
    expect(file.groups.flatMap((group) => group.rules.map((rule) => rule.alert))).toEqual(
      expect.arrayContaining([
        'FacadeErrorBudgetBurn',
        'FacadeLatencyHigh',
        'FacadeUpstreamBreakerOpen',
        'FacadeStaleAnswers',
        'FacadeRedisSkipped',
        'FacadeRateLimiting',
        'FacadePodRestarting',
      ]),
    );
  });

  it('link each alert to its runbook section in docs/operations.md, which says what to do', () => {
    const headings = new Map(
      [...operations.matchAll(/^#{2,4} (.+)$/gm)].map((match) => [anchor(match[1] ?? ''), match]),
    );
    for (const { alert, annotations } of alerts) {
      expect(annotations.runbook_url, alert).toBe(runbookUrl(alert));
      const [page, fragment = ''] = annotations.runbook_url.split('#');
      expect(page).toBe(RUNBOOK);
      expect(RUNBOOK).toMatch(/docs\/operations\.md$/);
      expect(headings.get(fragment)?.[1], alert).toBe(alert);
      const runbook = section('Alerts').split(`### ${alert}\n`)[1]?.split(/^### /m)[0] ?? '';
      for (const part of ['What it means.', 'What to look at.', 'What to do.'])
        expect(runbook, `${alert}: ${part}`).toContain(`**${part}**`);
    }
  });

  it('encode the objectives docs/operations.md states', () => {
    const slo = section('Service level objectives');
    const row = (name: string) => {
      const cells = new RegExp(`^\\| ${name} \\|(.+)\\|$`, 'm')
        .exec(slo)?.[1]
        ?.split('|')
        .map((cell) => cell.trim());
      if (!cells) throw new Error(`no row "${name}" in the objectives' table`);
      return cells;
    };
    const [target, counted, window] = row('availability');
    expect(target).toBe(percent(AVAILABILITY.objective));
    expect(window).toBe(`${AVAILABILITY.windowDays} days`);
    for (const [codeClass, codes] of Object.entries(CODE_CLASSES)) {
      const listed = new RegExp(`\`${codeClass}\` class \\(([^)]+)\\)`).exec(counted ?? '')?.[1];
      expect(listed?.match(/[A-Z_]+/g), codeClass).toEqual(codes);
    }
    const latency = row('latency');
    expect(latency[0]).toBe(`${percent(LATENCY.objective)} within ${LATENCY.seconds} s`);
    expect(latency[2]).toBe(`${AVAILABILITY.windowDays} days`);
    expect(slo).toContain(`The error budget is the rest: ${percent(errorBudget())} of operations`);
  });

  it('test each alert firing and staying quiet with promtool', () => {
    type Case = { alertname: string; exp_alerts?: Array<{ exp_labels?: Record<string, string> }> };
    const file = parse(readFileSync(RULE_TESTS, 'utf8')) as {
      tests: Array<{ alert_rule_test?: Case[] }>;
    };
    const cases = file.tests.flatMap((test) => test.alert_rule_test ?? []);
    for (const { alert, labels } of alerts) {
      const mine = cases.filter((one) => one.alertname === alert);
      const fires = mine.some((one) =>
        one.exp_alerts?.some((expected) =>
          Object.entries(labels).every(([name, value]) => expected.exp_labels?.[name] === value),
        ),
      );
      expect(fires, `${alert} ${JSON.stringify(labels)} fires in no case`).toBe(true);
      expect(
        mine.some((one) => (one.exp_alerts ?? []).length === 0),
        `${alert} is quiet in no case`,
      ).toBe(true);
    }
  });
});

describe('promtool', () => {
  it.runIf(!hasPromtool && process.env.CI === 'true')('is installed in CI', () => {
    expect.fail('promtool is not installed: .ci/run installs Debian\'s "prometheus"');
  });

  it.skipIf(!hasPromtool)("accepts every dashboard query as Prometheus's own PromQL", () => {
    // As recording rules, the one form in which promtool parses an expression without a server.
    const rules = dashboardExpressions(generatedPath('deploy/grafana/facade-dashboard.json')).map(
      ({ expr }, index) => ({
        record: `dashboard:query_${index}`,
        expr: expr.replace(/\$__(rate_)?interval/g, '5m'),
      }),
    );
    const dir = mkdtempSync(join(tmpdir(), 'dashboard-'));
    try {
      const file = join(dir, 'queries.yaml');
      writeFileSync(file, stringify({ groups: [{ name: 'dashboard', rules }] }));
      const check = promtool('check', 'rules', file);
      expect(check.status, check.output).toBe(0);
      expect(check.output).toContain(`${rules.length} rules found`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.skipIf(!hasPromtool)('checks the rule file', () => {
    const check = promtool('check', 'rules', RULES);
    expect(check.output).toContain('SUCCESS');
    expect(check.status, check.output).toBe(0);
  });

  // Hours of series evaluated minute by minute: seconds of CPU, more on a loaded machine.
  it.skipIf(!hasPromtool)("passes the rules' unit tests", { timeout: 90_000 }, () => {
    const run = promtool('test', 'rules', RULE_TESTS);
    expect(run.status, run.output).toBe(0);
  });
});
