// The on-call dashboard, built with Grafana's foundation SDK: deploy/grafana/facade-dashboard.json
// is written from `dashboard()` (scripts/observability.ts). Every panel reads the facade's own
// series (docs/operations.md#metrics) per pod, but the restarts, which are kube-state-metrics'.
import {
  GraphThresholdsStyleConfigBuilder,
  GraphThresholdsStyleMode,
  LegendDisplayMode,
  LegendPlacement,
  ReduceDataOptionsBuilder,
  SortOrder,
  TooltipDisplayMode,
  VisibilityMode,
  VizLegendOptionsBuilder,
  VizTooltipOptionsBuilder,
} from '@grafana/grafana-foundation-sdk/common';
import {
  type Dashboard,
  DashboardBuilder,
  DashboardCursorSync,
  DatasourceVariableBuilder,
  MappingType,
  QueryVariableBuilder,
  RowBuilder,
  ThresholdsConfigBuilder,
  ThresholdsMode,
  type ValueMapping,
  VariableRefresh,
  VariableSort,
} from '@grafana/grafana-foundation-sdk/dashboard';
import { DataqueryBuilder } from '@grafana/grafana-foundation-sdk/prometheus';
import { PanelBuilder as StatBuilder } from '@grafana/grafana-foundation-sdk/stat';
import { PanelBuilder as StateTimelineBuilder } from '@grafana/grafana-foundation-sdk/statetimeline';
import { PanelBuilder as TimeseriesBuilder } from '@grafana/grafana-foundation-sdk/timeseries';
import { errorRatio } from './alerts.js';
import {
  AVAILABILITY,
  CODE_CLASSES,
  type CodeClass,
  errorBudget,
  FACADE,
  LATENCY,
  percent,
  STALE_RESULTS,
  THRESHOLDS,
} from './objectives.js';

// biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable, not a template.
const DATASOURCE = { type: 'prometheus', uid: '${datasource}' };
/** The facade's series of the chosen namespace and pods. */
const S = `${FACADE}, namespace="$namespace", pod=~"$pod"`;
const RATE = '$__rate_interval';
const QUANTILES = [0.5, 0.95, 0.99] as const;

type Target = readonly [expr: string, legend: string];

interface PanelSpec {
  title: string;
  description: string;
  unit: string;
  targets: readonly Target[];
  /** A line at this value: the objective or the alert's threshold. */
  threshold?: number;
  /** A state's name and color for each value: drawn as a state timeline, one row per series. */
  mappings?: ValueMapping[];
  width?: number;
}

function query([expr, legend]: Target, index: number) {
  return new DataqueryBuilder()
    .datasource(DATASOURCE)
    .refId(String.fromCharCode(65 + index))
    .expr(expr)
    .legendFormat(legend);
}

function timeseries(spec: PanelSpec) {
  const panel = new TimeseriesBuilder()
    .title(spec.title)
    .description(spec.description)
    .datasource(DATASOURCE)
    .unit(spec.unit)
    .span(spec.width ?? 12)
    .height(8)
    .min(0)
    // Which route or pod a line is, and all of them at one instant: what on-call reads first.
    .legend(
      new VizLegendOptionsBuilder()
        .showLegend(true)
        .displayMode(LegendDisplayMode.List)
        .placement(LegendPlacement.Bottom),
    )
    .tooltip(
      new VizTooltipOptionsBuilder().mode(TooltipDisplayMode.Multi).sort(SortOrder.Descending),
    );
  for (const [index, target] of spec.targets.entries()) panel.withTarget(query(target, index));
  if (spec.threshold !== undefined) {
    panel
      .thresholds(
        new ThresholdsConfigBuilder().mode(ThresholdsMode.Absolute).steps([
          { value: null, color: 'green' },
          { value: spec.threshold, color: 'red' },
        ]),
      )
      .thresholdsStyle(
        new GraphThresholdsStyleConfigBuilder().mode(GraphThresholdsStyleMode.Dashed),
      );
  }
  return panel;
}

function stateTimeline(spec: PanelSpec, mappings: ValueMapping[]) {
  const panel = new StateTimelineBuilder()
    .title(spec.title)
    .description(spec.description)
    .datasource(DATASOURCE)
    .span(spec.width ?? 12)
    .height(8)
    .mappings(mappings)
    .showValue(VisibilityMode.Never)
    .mergeValues(true);
  for (const [index, target] of spec.targets.entries()) panel.withTarget(query(target, index));
  return panel;
}

const panel = (spec: PanelSpec) =>
  spec.mappings ? stateTimeline(spec, spec.mappings) : timeseries(spec);

const valueMap = (options: Record<string, [text: string, color: string]>): ValueMapping[] => [
  {
    type: MappingType.ValueToText,
    options: Object.fromEntries(
      Object.entries(options).map(([value, [text, color]], index) => [
        value,
        { text, color, index },
      ]),
    ),
  },
];

const quantile = (q: number, metric: string, by: string) =>
  `histogram_quantile(${q}, sum by (${by}le) (rate(${metric}_bucket{${S}}[${RATE}])))`;
const classes = Object.keys(CODE_CLASSES) as CodeClass[];

const traffic = (): PanelSpec[] => [
  {
    title: 'Operations by name',
    description: 'Executed operations per second, by operationName (past 100 names: other).',
    unit: 'reqps',
    targets: [
      [
        `sum by (operationName) (rate(graphql_envelop_request_duration_count{${S}}[${RATE}]))`,
        '{{operationName}}',
      ],
    ],
  },
  {
    title: 'Operations by pod',
    description: 'Executed operations per second, by pod.',
    unit: 'reqps',
    targets: [
      [`sum by (pod) (rate(graphql_envelop_request_duration_count{${S}}[${RATE}]))`, '{{pod}}'],
    ],
  },
  {
    title: 'Operations by client',
    description:
      'Executed operations per second by the client that sent them (apollographql-client-name and -version; unknown when not sent).',
    unit: 'reqps',
    width: 24,
    targets: [
      [
        `sum by (clientName, clientVersion) (rate(graphql_client_operations_total{${S}}[${RATE}]))`,
        '{{clientName}} {{clientVersion}}',
      ],
    ],
  },
  {
    title: 'Operation latency',
    description: `p50, p95 and p99 of all operations, request to answer; the line is the latency objective (${LATENCY.objective * 100}% within ${LATENCY.seconds} s).`,
    unit: 's',
    threshold: LATENCY.seconds,
    targets: QUANTILES.map((q) => [
      quantile(q, 'graphql_envelop_request_duration', ''),
      `p${q * 100}`,
    ]),
  },
  {
    title: 'Operation latency by name',
    description: 'p50, p95 and p99 by operationName.',
    unit: 's',
    threshold: LATENCY.seconds,
    targets: QUANTILES.map((q) => [
      quantile(q, 'graphql_envelop_request_duration', 'operationName, '),
      `{{operationName}} p${q * 100}`,
    ]),
  },
];

const errors = (): PanelSpec[] => [
  {
    title: 'Errors by code',
    description: "Errors answered per second by extensions.code, the caller's refusals included.",
    unit: 'short',
    targets: [[`sum by (code) (rate(graphql_errors_total{${S}}[${RATE}]))`, '{{code}}']],
  },
  {
    title: 'Server-side errors per operation',
    description: `Errors of the classes that spend the availability budget, per executed operation; the line is the budget (${AVAILABILITY.objective * 100}% over ${AVAILABILITY.windowDays} days).`,
    unit: 'percentunit',
    threshold: errorBudget(),
    targets: classes.map((codeClass) => [
      errorRatio(codeClass, RATE, { selector: S, by: '' }),
      codeClass,
    ]),
  },
];

const upstream = (): PanelSpec[] => [
  {
    title: 'Upstream calls by route and status',
    description:
      'Upstream attempts per second; status is the HTTP status, an error code when no answer came, or cancelled.',
    unit: 'reqps',
    targets: [
      [
        `sum by (route, status) (rate(upstream_calls_total{${S}}[${RATE}]))`,
        '{{route}} {{status}}',
      ],
    ],
  },
  {
    title: 'Upstream latency by route',
    description: 'p50, p95 and p99 of upstream attempts, by route.',
    unit: 's',
    targets: QUANTILES.map((q) => [
      quantile(q, 'upstream_call_duration_seconds', 'route, '),
      `{{route}} p${q * 100}`,
    ]),
  },
  {
    title: 'Upstream failures by route',
    description: 'Attempts per second answered with a 5xx, or with no answer (an error code).',
    unit: 'reqps',
    targets: [
      [
        `sum by (route, status) (rate(upstream_calls_total{${S}, status!~"[1-4]..|cancelled"}[${RATE}]))`,
        '{{route}} {{status}}',
      ],
    ],
  },
  {
    title: 'Joined calls by route',
    description:
      "Upstream reads per second a request joined instead of sending: another request's identical call was in flight.",
    unit: 'reqps',
    targets: [[`sum by (route) (rate(upstream_calls_joined_total{${S}}[${RATE}]))`, '{{route}}']],
  },
];

const breakers = (): PanelSpec[] => [
  {
    title: 'Breaker state by route and pod',
    description:
      'Each route’s circuit breaker, per pod: 0 closed, 1 open (calls fail fast with UPSTREAM_UNAVAILABLE), 2 half-open (one trial call). No series: closed since the start.',
    unit: 'none',
    targets: [[`max by (route, pod) (upstream_breaker_state{${S}})`, '{{route}} {{pod}}']],
    mappings: valueMap({
      0: ['closed', 'green'],
      1: ['open', 'red'],
      2: ['half-open', 'orange'],
    }),
  },
  {
    title: 'Breaker transitions',
    description: 'Changes of the breakers, by route and the state entered.',
    unit: 'short',
    targets: [
      [
        `sum by (route, state) (increase(upstream_breaker_transitions_total{${S}}[${RATE}]))`,
        '{{route}} {{state}}',
      ],
    ],
  },
];

const cache = (): PanelSpec[] => [
  {
    title: 'Cache lookups by result',
    description:
      'Upstream reads looked up in the kept ranges, per second: hit (fresh), miss, or answered past max-age by stale-while-revalidate or stale-if-error.',
    unit: 'reqps',
    targets: [
      [`sum by (route, result) (rate(cache_lookups_total{${S}}[${RATE}]))`, '{{route}} {{result}}'],
    ],
  },
  {
    title: 'Stale answers by route',
    description: `The share of lookups answered past their max-age; the line is the alert's threshold (${THRESHOLDS.staleShare * 100}%).`,
    unit: 'percentunit',
    threshold: THRESHOLDS.staleShare,
    targets: [
      [
        `sum by (route) (rate(cache_lookups_total{${S}, result=~"${STALE_RESULTS.join('|')}"}[${RATE}]))\n/\nsum by (route) (rate(cache_lookups_total{${S}}[${RATE}]))`,
        '{{route}}',
      ],
    ],
  },
  {
    title: 'Cache hit ratio by route',
    description: 'The share of lookups answered fresh.',
    unit: 'percentunit',
    targets: [
      [
        `sum by (route) (rate(cache_lookups_total{${S}, result="hit"}[${RATE}]))\n/\nsum by (route) (rate(cache_lookups_total{${S}}[${RATE}]))`,
        '{{route}}',
      ],
    ],
  },
  {
    title: 'Background refreshes by outcome',
    description: 'Refreshes of kept ranges past their max-age, per second, ok or failed.',
    unit: 'reqps',
    targets: [
      [
        `sum by (route, outcome) (rate(cache_refreshes_total{${S}}[${RATE}]))`,
        '{{route}} {{outcome}}',
      ],
    ],
  },
];

const redisAndLimits = (): PanelSpec[] => [
  {
    title: 'Redis used, by pod',
    description:
      'With REDIS_URL: 1 while Redis is used, 0 while it is skipped and the pod counts and keeps in its own memory.',
    unit: 'none',
    targets: [[`min by (pod) (redis_available{${S}})`, '{{pod}}']],
    mappings: valueMap({ 0: ['skipped', 'red'], 1: ['used', 'green'] }),
  },
  {
    title: 'Redis misses by reason',
    description:
      'Redis commands a request went on without, per second: timeout, error, or skipped.',
    unit: 'short',
    targets: [
      [
        `sum by (pod, reason) (rate(redis_commands_missed_total{${S}}[${RATE}]))`,
        '{{pod}} {{reason}}',
      ],
    ],
  },
  {
    title: 'Rate-limited answers by pod',
    description: "RATE_LIMITED answers per second: the facade's rate limit, or the upstream's 429.",
    unit: 'short',
    targets: [
      [`sum by (pod) (rate(graphql_errors_total{${S}, code="RATE_LIMITED"}[${RATE}]))`, '{{pod}}'],
    ],
  },
  {
    title: 'Rate-limited share',
    description: `RATE_LIMITED answers as a share of operations and refusals; the line is the alert's threshold (${THRESHOLDS.rateLimitedShare * 100}%).`,
    unit: 'percentunit',
    threshold: THRESHOLDS.rateLimitedShare,
    targets: [
      [
        `sum (rate(graphql_errors_total{${S}, code="RATE_LIMITED"}[${RATE}]))\n/\n(sum (rate(graphql_envelop_request_duration_count{${S}}[${RATE}])) + sum (rate(graphql_errors_total{${S}, code="RATE_LIMITED"}[${RATE}])))`,
        'rate-limited',
      ],
    ],
  },
];

const subscriptions = (): PanelSpec[] => [
  {
    title: 'Open subscriptions by pod',
    description:
      'Subscriptions open now (domainDnsCheck watches), per pod: bounded by MAX_SUBSCRIPTIONS per process.',
    unit: 'short',
    width: 8,
    targets: [[`sum by (pod) (graphql_subscriptions_active{${S}})`, '{{pod}}']],
  },
  {
    title: 'Subscriptions ended by reason',
    description:
      'Subscriptions ended per second, by field and reason: matched, idle-limit, time-limit, shutdown, cancelled (the client left) or error.',
    unit: 'short',
    width: 8,
    targets: [
      [
        `sum by (field, reason) (rate(graphql_subscriptions_ended_total{${S}}[${RATE}]))`,
        '{{field}} {{reason}}',
      ],
    ],
  },
  {
    title: 'Watch look-ups by pod',
    description:
      'TXT look-ups per second each pod made for watched names; every subscriber of a name shares them.',
    unit: 'short',
    width: 8,
    targets: [[`sum by (pod) (rate(dns_watch_lookups_total{${S}}[${RATE}]))`, '{{pod}}']],
  },
];

const processPanels = (): PanelSpec[] => [
  {
    title: 'Memory by pod',
    description: 'Resident memory and V8 heap in use, per pod (the container limit is 512 MiB).',
    unit: 'bytes',
    width: 8,
    targets: [
      [`sum by (pod) (process_resident_memory_bytes{${S}})`, '{{pod}} resident'],
      [`sum by (pod) (nodejs_heap_size_used_bytes{${S}})`, '{{pod}} heap used'],
    ],
  },
  {
    title: 'Event-loop lag by pod',
    description: "p99 of the event loop's delay, per pod: above a few ms, the CPU is saturated.",
    unit: 's',
    width: 8,
    targets: [[`max by (pod) (nodejs_eventloop_lag_p99_seconds{${S}})`, '{{pod}}']],
  },
  {
    title: 'CPU by pod',
    description: 'CPU seconds per second, per pod: one facade process uses one core.',
    unit: 'percentunit',
    width: 8,
    targets: [[`sum by (pod) (rate(process_cpu_seconds_total{${S}}[${RATE}]))`, '{{pod}}']],
  },
  {
    title: 'Versions running',
    description: 'Pods by the facade version and Node they run: a rollout, as it goes.',
    unit: 'short',
    targets: [
      [`count by (version, node) (facade_build_info{${S}})`, '{{version}} on Node {{node}}'],
    ],
  },
  {
    title: 'Container restarts by pod',
    description: "kube-state-metrics' count of the facade container's restarts.",
    unit: 'short',
    targets: [
      [
        `sum by (pod) (increase(kube_pod_container_status_restarts_total{namespace="$namespace", container="facade", pod=~"$pod"}[${RATE}]))`,
        '{{pod}}',
      ],
    ],
  },
];

function sloStat(title: string, description: string, expr: string, objective: number) {
  return (
    new StatBuilder()
      .title(title)
      .description(`${description}; the objective is ${percent(objective)}.`)
      .datasource(DATASOURCE)
      .unit('percentunit')
      .decimals(3)
      .span(12)
      .height(6)
      .thresholds(
        new ThresholdsConfigBuilder().mode(ThresholdsMode.Absolute).steps([
          { value: null, color: 'red' },
          { value: objective, color: 'green' },
        ]),
      )
      .reduceOptions(new ReduceDataOptionsBuilder().calcs(['lastNotNull']))
      // One value over the whole window: an instant query, not a month of points.
      .withTarget(query([expr, title], 0).instant())
  );
}

/** The objectives over their window, for the namespace: what the budget alerts protect. */
function objectives() {
  const window = `[${AVAILABILITY.windowDays}d]`;
  const ns = `${FACADE}, namespace="$namespace"`;
  const server = Object.values(CODE_CLASSES).flat().join('|');
  const operations = `sum (increase(graphql_envelop_request_duration_count{${ns}}${window}))`;
  return [
    sloStat(
      `Availability, ${AVAILABILITY.windowDays} days`,
      'Operations answered without a server-side error (the upstream and internal classes)',
      // No server-side error at all is no series: count it as none rather than show no data.
      `1 - (sum (increase(graphql_errors_total{${ns}, code=~"${server}"}${window})) or vector(0))\n/\n${operations}`,
      AVAILABILITY.objective,
    ),
    sloStat(
      `Within ${LATENCY.seconds} s, ${AVAILABILITY.windowDays} days`,
      `Operations answered within ${LATENCY.seconds} s`,
      `sum (increase(graphql_envelop_request_duration_bucket{${ns}, le="${LATENCY.seconds}"}${window}))\n/\n${operations}`,
      LATENCY.objective,
    ),
  ];
}

function variables(builder: DashboardBuilder) {
  const label = (name: string, selector: string) =>
    new QueryVariableBuilder(name)
      .label(name)
      .datasource(DATASOURCE)
      .query(`label_values(facade_build_info{${selector}}, ${name})`)
      .refresh(VariableRefresh.OnTimeRangeChanged)
      .sort(VariableSort.AlphabeticalAsc);
  return builder
    .withVariable(
      new DatasourceVariableBuilder('datasource').label('Data source').type('prometheus'),
    )
    .withVariable(label('namespace', FACADE))
    .withVariable(
      label('pod', `${FACADE}, namespace="$namespace"`).multi(true).includeAll(true).allValue('.+'),
    );
}

const ROWS: Array<[title: string, panels: () => PanelSpec[]]> = [
  ['Traffic and latency', traffic],
  ['Errors', errors],
  ['Upstream calls', upstream],
  ['Breakers', breakers],
  ['Cache', cache],
  ['Redis and rate limit', redisAndLimits],
  ['Subscriptions', subscriptions],
  ['Process', processPanels],
];

export function dashboard(): Dashboard {
  const builder = variables(
    new DashboardBuilder('GraphQL facade')
      .uid('graphql-facade')
      .description(
        'Traffic, errors, upstream calls, caches, Redis and processes of the facade, per pod.',
      )
      .tags(['graphql-facade'])
      .editable()
      .tooltip(DashboardCursorSync.Crosshair)
      .time({ from: 'now-6h', to: 'now' })
      .refresh('30s')
      .timezone('browser'),
  );
  builder.withRow(new RowBuilder('Service level objectives'));
  for (const stat of objectives()) builder.withPanel(stat);
  for (const [title, panels] of ROWS) {
    builder.withRow(new RowBuilder(title));
    for (const spec of panels()) builder.withPanel(panel(spec));
  }
  return builder.build();
}
