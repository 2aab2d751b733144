import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../sandbox/server.js';
import { LATENCY } from '../../scripts/observability/objectives.js';
import { generatedPath } from '../../scripts/observability.js';
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.js';
import { freePort } from '../helpers/net.js';
import { type FacadeProcess, post, startFacade } from '../helpers/process.js';
import {
  dashboardExpressions,
  exportedSeries,
  promqlNames,
  ruleExpressions,
} from '../helpers/promql.js';
import { sseClient, subscribe } from '../helpers/subscriptions.js';

// What Prometheus adds to every series it scrapes (the PodMonitor's targets), not the facade.
const TARGET_LABELS = new Set(['job', 'namespace', 'pod', 'instance', 'container']);
// kube-state-metrics' series, with the labels it gives them: the one source that is not the facade.
const EXTERNAL: Record<string, string[]> = {
  kube_pod_container_status_restarts_total: ['namespace', 'pod', 'container', 'uid'],
};
const ROUTE = 'GET /git/v1/repo';
const DOMAIN = 'metrics.example.com';
const CODE = 'svc-verify-metrics';
// Another process on two shared cores: what it does next may take a while to show.
const POLL = { interval: 100, timeout: 15_000 };

const expressions = () => [
  ...dashboardExpressions(generatedPath('deploy/grafana/facade-dashboard.json')),
  ...ruleExpressions(generatedPath('deploy/prometheus/rules.yaml')),
];

/** What `expr` names that `exported` lacks, one line per name. */
function unexported(where: string, expr: string, exported: Map<string, Set<string>>): string[] {
  const names = promqlNames(expr);
  const has = (metric: string, label: string) =>
    TARGET_LABELS.has(label) ||
    exported.get(metric)?.has(label) ||
    EXTERNAL[metric]?.includes(label);
  const missing = names.errors.map((error) => `${where}: does not parse: ${error}`);
  for (const { metric, labels } of names.selectors) {
    if (!exported.has(metric) && !EXTERNAL[metric]) {
      missing.push(`${where}: metric ${metric}`);
      continue;
    }
    for (const label of labels)
      if (!has(metric, label)) missing.push(`${where}: label ${label} of ${metric}`);
  }
  for (const { labels, metrics } of names.groupings)
    for (const label of labels)
      if (!metrics.some((metric) => has(metric, label)))
        missing.push(`${where}: label ${label} of none of ${metrics.join(', ')}`);
  return missing;
}

function gate() {
  let open = () => {};
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

describe('the dashboard and the alerts, against what the facade exports', () => {
  let sandbox: Sandbox;
  let dns: TestDnsServer;
  let facade: FacadeProcess;
  let base: string;
  const scrape = async () => (await fetch(`${base}/metrics`)).text();
  const ask = (query: string, token: string) =>
    post(facade.url, query, { authorization: `Bearer ${token}` });

  beforeAll(async () => {
    sandbox = await startSandbox({
      faults: true,
      repositories: 7,
      repositoryCacheControl: 'max-age=2, stale-while-revalidate=600',
    });
    dns = await startDnsServer();
    dns.setTxt(`_service_custom_hostname.${DOMAIN}`, [CODE]);
    // Nothing listens there: Redis is missed, then skipped, as when it goes away.
    const redisPort = await freePort();
    facade = await startFacade({
      UPSTREAM_URL: sandbox.url,
      DNS_SERVERS: dns.address,
      HOST: '127.0.0.1',
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      BREAKER_THRESHOLD: '2',
      // Open until the scrape, however slow the machine.
      BREAKER_COOLDOWN_MS: '120000',
      // Above what the stale answer's polling may take; the last step spends the rest.
      RATE_LIMIT_POINTS: '100',
      RATE_LIMIT_ADDRESS_POINTS: '100000',
    });
    base = facade.url.replace('/graphql', '');
  }, 60_000);

  afterAll(async () => {
    await facade?.stop();
    await sandbox?.close();
    await dns?.close();
  });

  it('exports every metric and label a panel or an alert names, once driven', async () => {
    // A miss, then a hit: another document, so the response cache does not answer it whole.
    expect((await ask('{ a: repositories(limit: 2) { total } }', 'cache')).status).toBe(200);
    await ask('{ b: repositories(limit: 2) { total } }', 'cache');
    // Past max-age: answered stale, and refreshed in the background.
    let n = 0;
    await expect
      .poll(async () => {
        await ask(`{ c${n++}: repositories(limit: 2) { total } }`, 'cache');
        return scrape();
      }, POLL)
      .toMatch(/cache_refreshes_total\{[^}]*outcome="ok"/);
    // The caller's error.
    await ask('{ repositories(limit: -1) { total } }', 'error');
    // Two identical reads in flight at once: the second joins the first.
    const held = gate();
    sandbox.setFault(ROUTE, { until: held.promise, times: 1 });
    const first = ask('{ repositories(limit: 3) { total } }', 'join');
    await expect.poll(() => sandbox.counts()[ROUTE], POLL).toBeGreaterThan(0);
    const second = ask('{ joined: repositories(limit: 3) { total } }', 'join');
    await expect.poll(scrape, POLL).toMatch(/upstream_calls_joined_total\{/);
    held.open();
    await Promise.all([first, second]);
    // Upstream failures until the route's breaker opens.
    sandbox.setFault(ROUTE, { status: 500 });
    for (let i = 0; i < 3; i++) await ask(`{ f${i}: repositories(limit: 4) { total } }`, 'fail');
    sandbox.clearFaults();
    // A subscription that matches at once, and so ends.
    const watch = subscribe(sseClient(facade.url, { authorization: 'Bearer watch' }), {
      domain: DOMAIN,
      code: CODE,
    });
    expect((await watch.rest()).at(-1)?.data?.domainDnsCheck.matches).toBe(true);
    // The rate limit, past its points.
    let status = 0;
    for (let i = 0; i < 110 && status !== 429; i++)
      status = (await ask('{ __typename }', 'limited')).status;
    expect(status).toBe(429);

    const text = await scrape();
    for (const shown of [
      /upstream_breaker_state\{[^}]*\} 1/,
      /graphql_errors_total\{[^}]*code="RATE_LIMITED"/,
      /graphql_errors_total\{[^}]*code="UPSTREAM_ERROR"/,
      /cache_lookups_total\{[^}]*result="hit"/,
      /redis_commands_missed_total\{/,
      /graphql_subscriptions_ended_total\{[^}]*reason="matched"/,
    ])
      expect(text).toMatch(shown);
    const exported = exportedSeries(text);
    const missing = expressions().flatMap(({ where, expr }) => unexported(where, expr, exported));
    expect(missing).toEqual([]);
  }, 60_000);

  it('has the latency objective on a bucket edge of the operations histogram', async () => {
    await ask('{ __typename }', 'edge');
    const edges = [
      ...(await scrape()).matchAll(/^graphql_envelop_request_duration_bucket\{[^}]*le="([^"]+)"/gm),
    ].map((match) => match[1]);
    expect(edges).toContain(String(LATENCY.seconds));
  });
});

describe('the names check', () => {
  const exported = exportedSeries(
    [
      'graphql_errors_total{code="BAD_USER_INPUT"} 1',
      'upstream_calls_total{route="GET /x",status="200"} 3',
    ].join('\n'),
  );

  it('fails on a metric, a matcher label or a grouping label the facade does not export', () => {
    expect(
      unexported('x', 'sum by (code) (rate(graphql_errors_total{job="a"}[5m]))', exported),
    ).toEqual([]);
    expect(unexported('x', 'rate(graphql_error_total[5m])', exported)).toEqual([
      'x: metric graphql_error_total',
    ]);
    expect(unexported('x', 'upstream_calls_total{outcome="200"}', exported)).toEqual([
      'x: label outcome of upstream_calls_total',
    ]);
    expect(unexported('x', 'sum by (reason) (upstream_calls_total)', exported)).toEqual([
      'x: label reason of none of upstream_calls_total',
    ]);
    expect(unexported('x', 'sum by (route) (upstream_calls_total[5m]', exported)).not.toEqual([]);
  });
});
