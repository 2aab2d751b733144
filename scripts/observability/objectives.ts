// The figures the alerts encode, said once: the rules and the dashboard are generated from them,
// and test/app/observability.test.ts checks that docs/operations.md#service-level-objectives
// states the same ones.
import type { ErrorCode } from '../../src/errors.js';
import type { CacheLookup } from '../../src/telemetry/metrics.js';

/** The share of operations answered without a server-side error, over `windowDays`. */
export const AVAILABILITY = { objective: 0.995, windowDays: 30 } as const;

/**
 * The share of operations answered within `seconds`: a bucket boundary of
 * graphql_envelop_request_duration, so that its p99 is read from a bucket edge (a test checks it).
 */
export const LATENCY = { objective: 0.99, seconds: 1 } as const;

/**
 * Error codes by class. Only the server-side classes spend the availability budget: a refusal
 * of the caller's own request is the contract working.
 */
export const CODE_CLASSES = {
  upstream: [
    'UPSTREAM_ERROR',
    'UPSTREAM_TIMEOUT',
    'UPSTREAM_UNAVAILABLE',
    'UPSTREAM_BAD_RESPONSE',
  ] satisfies ErrorCode[],
  internal: ['INTERNAL_SERVER_ERROR'] satisfies ErrorCode[],
} as const;

export type CodeClass = keyof typeof CODE_CLASSES;

/** What pages someone besides the SLOs: the figures the runbook quotes. */
export const THRESHOLDS = {
  /** Answers from stale-while-revalidate or stale-if-error, as a share of a route's lookups. */
  staleShare: 0.2,
  /** RATE_LIMITED answers as a share of all answers. */
  rateLimitedShare: 0.05,
  /** Container restarts of one pod within `restartWindow`. */
  restarts: 2,
  restartWindow: '30m',
} as const;

export const STALE_RESULTS = [
  'stale-while-revalidate',
  'stale-if-error',
] as const satisfies readonly CacheLookup[];

/**
 * The facade's series: the scrape job is named after the pods' app.kubernetes.io/name label
 * (the monitoring component's PodMonitor sets it so; name a scrape job of your own the same).
 */
export const JOB = 'graphql-facade';
export const FACADE = `job="${JOB}"`;

/** kube-state-metrics' series of the facade's containers (deploy/kubernetes/deployment.yaml). */
export const FACADE_CONTAINERS = `container="facade", pod=~"${JOB}-.*"`;

/**
 * Where the runbook is: its sections' anchors are appended. A path in this repository; point it
 * at where your copy of the docs is served (then `npm run observability`) for links that open.
 */
export const RUNBOOK = 'docs/operations.md';

/** The SLO's error budget: the share of operations that may fail. */
export const errorBudget = () => Number((1 - AVAILABILITY.objective).toFixed(6));

/** A share as docs write it: 0.995 -> "99.5%". */
export const percent = (share: number) => `${Number((share * 100).toFixed(3))}%`;
