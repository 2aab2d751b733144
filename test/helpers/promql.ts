import { readFileSync } from 'node:fs';
import { parser } from '@prometheus-io/lezer-promql';
import { parse as parseYaml } from 'yaml';

/** A series selector: its metric name and the labels its matchers name. */
export interface Selector {
  metric: string;
  labels: string[];
}

/** Labels a `by`, `without`, `on`, `ignoring` or `group_*` names, and the metrics it groups. */
export interface Grouping {
  labels: string[];
  metrics: string[];
}

export interface Names {
  selectors: Selector[];
  groupings: Grouping[];
  /** Where the expression does not parse: a query Prometheus or Grafana would refuse. */
  errors: string[];
}

// Grafana's own variables are not PromQL: a range of `$__rate_interval` parses as one of 5m.
const GRAFANA_RANGE = /\$__(rate_)?interval/g;

/** The metrics and labels a PromQL expression names, read with Prometheus's own grammar. */
export function promqlNames(expr: string): Names {
  const text = expr.replace(GRAFANA_RANGE, '5m');
  const tree = parser.parse(text);
  const names: Names = { selectors: [], groupings: [], errors: [] };
  const slice = (from: number, to: number) => text.slice(from, to);
  tree.iterate({
    enter(ref) {
      const node = ref.node;
      if (node.type.isError)
        names.errors.push(`${slice(node.from - 10, node.to + 10)} (at ${node.from})`);
      if (node.name === 'VectorSelector') {
        const identifier = node.getChild('Identifier');
        const labels = node.getChild('LabelMatchers');
        names.selectors.push({
          metric: identifier ? slice(identifier.from, identifier.to) : '',
          labels: labelNames(labels, slice),
        });
      }
      if (node.name === 'GroupingLabels') {
        let scope = node.parent;
        while (scope && scope.name !== 'AggregateExpr' && scope.name !== 'BinaryExpr')
          scope = scope.parent;
        const metrics: string[] = [];
        scope?.toTree().iterate({
          enter(inner) {
            if (inner.name !== 'VectorSelector') return;
            const id = inner.node.getChild('Identifier');
            if (id && scope) metrics.push(slice(scope.from + id.from, scope.from + id.to));
          },
        });
        names.groupings.push({ labels: labelNames(node, slice), metrics });
      }
    },
  });
  return names;
}

function labelNames(
  node: { toTree(): { iterate(spec: object): void }; from: number } | null,
  slice: (from: number, to: number) => string,
): string[] {
  if (!node) return [];
  const found: string[] = [];
  node.toTree().iterate({
    enter(inner: { name: string; from: number; to: number }) {
      if (inner.name === 'LabelName')
        found.push(slice(node.from + inner.from, node.from + inner.to));
    },
  });
  return found;
}

/** Every PromQL expression of the dashboard, by where it is: panels' targets and variables. */
export function dashboardExpressions(path: string): Array<{ where: string; expr: string }> {
  const dashboard = JSON.parse(readFileSync(path, 'utf8')) as {
    panels: Array<{ title: string; targets?: Array<{ expr: string }> }>;
    templating: { list: Array<{ name: string; type: string; query?: string }> };
  };
  const panels = dashboard.panels.flatMap((panel) =>
    (panel.targets ?? []).map((target) => ({ where: `panel "${panel.title}"`, expr: target.expr })),
  );
  const variables = dashboard.templating.list
    .filter((variable) => variable.type === 'query')
    .map((variable) => {
      // label_values(<selector>, <label>) is Grafana's: the selector is PromQL, the label one of it.
      const match = /^label_values\((.+),\s*(\w+)\)$/s.exec(variable.query ?? '');
      if (!match)
        throw new Error(`variable ${variable.name}: not label_values(): ${variable.query}`);
      return { where: `variable $${variable.name}`, expr: `sum by (${match[2]}) (${match[1]})` };
    });
  return [...panels, ...variables];
}

/** Every alert's expression of a Prometheus rule file. */
export function ruleExpressions(path: string): Array<{ where: string; expr: string }> {
  const file = parseYaml(readFileSync(path, 'utf8')) as {
    groups: Array<{
      rules: Array<{ alert: string; expr: string; labels?: Record<string, string> }>;
    }>;
  };
  return file.groups.flatMap((group) =>
    group.rules.map((rule) => ({
      where: `alert ${rule.alert} ${JSON.stringify(rule.labels ?? {})}`,
      expr: rule.expr,
    })),
  );
}

/** Metric name -> the label names its samples carry, from Prometheus's text format. */
export function exportedSeries(text: string): Map<string, Set<string>> {
  const series = new Map<string, Set<string>>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s/.exec(line);
    if (!match?.[1]) continue;
    const labels = series.get(match[1]) ?? new Set<string>();
    for (const label of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"/g))
      if (label[1]) labels.add(label[1]);
    series.set(match[1], labels);
  }
  return series;
}
