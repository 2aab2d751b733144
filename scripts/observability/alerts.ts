// The alert rules, as Prometheus reads them: deploy/prometheus/rules.yaml and the monitoring
// component's PrometheusRule are both written from `ruleGroups()` (scripts/observability.ts).
// Every alert's runbook is its section of docs/operations.md#alerts, named as the alert.
import {
  AVAILABILITY,
  CODE_CLASSES,
  type CodeClass,
  errorBudget,
  FACADE,
  FACADE_CONTAINERS,
  LATENCY,
  percent,
  RUNBOOK,
  STALE_RESULTS,
  THRESHOLDS,
} from './objectives.js';

export interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels: { severity: 'critical' | 'warning' } & Record<string, string>;
  annotations: { summary: string; description: string; runbook_url: string };
}

export interface RuleGroup {
  name: string;
  rules: AlertRule[];
}

/** The section of the runbook an alert links: GitHub's anchor for a `### <alert>` heading. */
export const runbookUrl = (alert: string) => `${RUNBOOK}#${alert.toLowerCase()}`;

/**
 * Multi-window burn rates over the availability budget (the Google SRE workbook's): each pair
 * fires when the long window spends the budget `factor` times too fast and the short one still
 * does, so that the alert stops soon after the errors do.
 */
const BURN_RATES = {
  critical: [
    { long: '1h', short: '5m', factor: 14.4 },
    { long: '6h', short: '30m', factor: 6 },
  ],
  warning: [
    { long: '1d', short: '2h', factor: 3 },
    { long: '3d', short: '6h', factor: 1 },
  ],
} as const;

const codes = (codeClass: CodeClass) => CODE_CLASSES[codeClass].join('|');
const round = (value: number) => Number(value.toFixed(6));

/**
 * Errors of a class per executed operation, over `window`, summed `by` these labels; or, `by`
 * none, a plain sum where no error at all counts as 0 (a chart's zero rather than no data).
 */
export function errorRatio(
  codeClass: CodeClass,
  window: string,
  { selector = FACADE, by = 'namespace' } = {},
): string {
  const sum = by ? `sum by (${by})` : 'sum';
  const errors = `${sum} (rate(graphql_errors_total{${selector}, code=~"${codes(codeClass)}"}[${window}]))`;
  return [
    by ? errors : `(${errors} or vector(0))`,
    `${sum} (rate(graphql_envelop_request_duration_count{${selector}}[${window}]))`,
  ].join('\n/\n');
}

function burnRule(codeClass: CodeClass, severity: keyof typeof BURN_RATES): AlertRule {
  const expr = BURN_RATES[severity]
    .map(({ long, short, factor }) => {
      const limit = round(factor * errorBudget());
      return `(\n(${errorRatio(codeClass, long)}) > ${limit}\nand\n(${errorRatio(codeClass, short)}) > ${limit}\n)`;
    })
    .join('\nor\n');
  const windows = BURN_RATES[severity].map((burn) => `${burn.factor}x over ${burn.long}`);
  return {
    alert: 'FacadeErrorBudgetBurn',
    expr,
    for: severity === 'critical' ? '2m' : '15m',
    labels: { severity, class: codeClass },
    annotations: {
      summary: `{{ $labels.namespace }}: ${codeClass} errors are spending the ${percent(AVAILABILITY.objective)} availability budget too fast`,
      description: `Errors of class ${codeClass} (${codes(codeClass)}) per operation are {{ $value | humanizePercentage }}, above ${windows.join(' or ')} the budget of ${percent(errorBudget())} over ${AVAILABILITY.windowDays} days.`,
      runbook_url: runbookUrl('FacadeErrorBudgetBurn'),
    },
  };
}

const latencyRule = (): AlertRule => ({
  alert: 'FacadeLatencyHigh',
  expr: `histogram_quantile(${LATENCY.objective}, sum by (namespace, le) (rate(graphql_envelop_request_duration_bucket{${FACADE}}[5m]))) > ${LATENCY.seconds}`,
  for: '10m',
  labels: { severity: 'critical' },
  annotations: {
    summary: `{{ $labels.namespace }}: p${LATENCY.objective * 100} of operations above ${LATENCY.seconds} s`,
    description: `The p${LATENCY.objective * 100} of executed operations is {{ $value | humanizeDuration }}; the objective is ${percent(LATENCY.objective)} within ${LATENCY.seconds} s.`,
    runbook_url: runbookUrl('FacadeLatencyHigh'),
  },
});

const breakerRule = (): AlertRule => ({
  alert: 'FacadeUpstreamBreakerOpen',
  expr: `max by (namespace, route) (upstream_breaker_state{${FACADE}}) > 0`,
  for: '5m',
  labels: { severity: 'critical' },
  annotations: {
    summary: '{{ $labels.namespace }}: the upstream breaker of {{ $labels.route }} is not closed',
    description:
      'The circuit breaker of {{ $labels.route }} has been open or half-open for 5 minutes on at least one pod: its calls fail fast with UPSTREAM_UNAVAILABLE.',
    runbook_url: runbookUrl('FacadeUpstreamBreakerOpen'),
  },
});

const staleRule = (): AlertRule => ({
  alert: 'FacadeStaleAnswers',
  expr: [
    `sum by (namespace, route) (rate(cache_lookups_total{${FACADE}, result=~"${STALE_RESULTS.join('|')}"}[10m]))`,
    '/',
    `sum by (namespace, route) (rate(cache_lookups_total{${FACADE}}[10m]))`,
    `> ${THRESHOLDS.staleShare}`,
  ].join('\n'),
  for: '15m',
  labels: { severity: 'warning' },
  annotations: {
    summary: '{{ $labels.namespace }}: stale answers hold up {{ $labels.route }}',
    description: `{{ $value | humanizePercentage }} of the lookups of {{ $labels.route }} are answered past their max-age (above ${percent(THRESHOLDS.staleShare)}).`,
    runbook_url: runbookUrl('FacadeStaleAnswers'),
  },
});

const redisRule = (): AlertRule => ({
  alert: 'FacadeRedisSkipped',
  expr: `max by (namespace, pod) (redis_available{${FACADE}}) == 0`,
  for: '5m',
  labels: { severity: 'warning' },
  annotations: {
    summary: '{{ $labels.namespace }}/{{ $labels.pod }} is skipping Redis',
    description:
      'Redis has not answered this pod for 5 minutes: it counts the rate limit and keeps APQ documents and answers in its own memory.',
    runbook_url: runbookUrl('FacadeRedisSkipped'),
  },
});

const limited = `sum by (namespace) (rate(graphql_errors_total{${FACADE}, code="RATE_LIMITED"}[10m]))`;

// A refusal is not an executed operation: the share is of operations and refusals together.
const rateLimitRule = (): AlertRule => ({
  alert: 'FacadeRateLimiting',
  expr: [
    `${limited}\n/\n(`,
    `  sum by (namespace) (rate(graphql_envelop_request_duration_count{${FACADE}}[10m]))`,
    `  + ${limited}`,
    `)\n> ${THRESHOLDS.rateLimitedShare}`,
  ].join('\n'),
  for: '15m',
  labels: { severity: 'warning' },
  annotations: {
    summary: '{{ $labels.namespace }}: RATE_LIMITED answers are {{ $value | humanizePercentage }}',
    description: `More than ${percent(THRESHOLDS.rateLimitedShare)} of answers are RATE_LIMITED: the facade's rate limit refusing callers, or the upstream's 429.`,
    runbook_url: runbookUrl('FacadeRateLimiting'),
  },
});

const restartRule = (): AlertRule => ({
  alert: 'FacadePodRestarting',
  expr: `increase(kube_pod_container_status_restarts_total{${FACADE_CONTAINERS}}[${THRESHOLDS.restartWindow}]) >= ${THRESHOLDS.restarts}`,
  labels: { severity: 'warning' },
  annotations: {
    summary: '{{ $labels.namespace }}/{{ $labels.pod }} restarted {{ $value }} times',
    description: `The facade's container restarted at least ${THRESHOLDS.restarts} times within ${THRESHOLDS.restartWindow} (kube-state-metrics).`,
    runbook_url: runbookUrl('FacadePodRestarting'),
  },
});

export function ruleGroups(): RuleGroup[] {
  const classes = Object.keys(CODE_CLASSES) as CodeClass[];
  return [
    {
      name: 'graphql-facade-slo',
      rules: [
        ...classes.flatMap((codeClass) => [
          burnRule(codeClass, 'critical'),
          burnRule(codeClass, 'warning'),
        ]),
        latencyRule(),
      ],
    },
    {
      name: 'graphql-facade',
      rules: [breakerRule(), staleRule(), redisRule(), rateLimitRule(), restartRule()],
    },
  ];
}
